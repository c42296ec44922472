"""bench.challenger_cost on a few labels: the table it writes, and the README bullet quoting it."""

from __future__ import annotations

from pathlib import Path

from bench.challenger_cost import main
from bench.readme import challenger_item
from bench.report import read_section


def test_the_bench_writes_its_section(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    assert main(["--repeats", "1", "--labels", "30", "--dims", "4", "--output", str(out)]) == 0
    body = read_section(out, "challenger-cost")
    assert body is not None and "| 4 |" in body
    assert "per label" in challenger_item(out) and "per prediction" in challenger_item(out)
