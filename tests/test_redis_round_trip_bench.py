"""bench.redis_round_trip on a few calls: every client and loop gets a row, against a real redis-server."""

from __future__ import annotations

from pathlib import Path

from bench.redis_round_trip import BASELINE, ROWS, RUNNERS, STORE_ROWS, main
from bench.report import read_section


def test_the_bench_writes_its_section(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    assert main(["--calls", "5", "--repeats", "1", "--output", str(out)]) == 0
    body = read_section(out, "redis-round-trip")
    assert body is not None
    rows = [line for line in body.splitlines() if line.startswith("| PING |") or line.startswith("| pending")]
    assert len(rows) == 2 * len(RUNNERS) * len(ROWS)
    assert f"| PING | uvloop | {BASELINE} |" in body and "1.00 (1.00 to 1.00)" in body
    for row in STORE_ROWS:
        assert f"| {row} |" in body
    assert "The pipelined connection saves" in body
