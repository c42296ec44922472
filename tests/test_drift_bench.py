"""bench.drift on a short stream: the table it writes, and the delays and false alarms it counts."""

from __future__ import annotations

from pathlib import Path

from bench.drift import main
from bench.readme import drift_item
from bench.report import read_section


def test_the_bench_writes_its_section_and_the_readme_quotes_it(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    assert main(["--seeds", "0", "--stationary", "3000", "--after", "1500", "--output", str(out)]) == 0
    body = read_section(out, "drift")
    assert body is not None and "| all | 3 |" in body
    assert "hyperplane/0: delay" in body
    item = drift_item(out)
    assert "on 3 seeded streams" in item and "false alarms per 100,000" in item
