"""bench.command_packing on a few calls: both packers give the same bytes, and the table it writes."""

from __future__ import annotations

from pathlib import Path

from bench.command_packing import main
from bench.report import read_section


def test_the_bench_writes_its_section(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    assert main(["--items", "3", "--calls", "5", "--repeats", "1", "--output", str(out)]) == 0
    body = read_section(out, "command-packing")
    assert body is not None
    assert "| pack |" in body and "| put_pending |" in body and "the same bytes from both packers" in body
