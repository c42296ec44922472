"""bench.log_retention on a few entries: the table it writes, and the README bullet quoting it."""

from __future__ import annotations

from pathlib import Path

import redis

from bench.log_retention import main
from bench.readme import retention_item
from bench.report import read_section


def test_the_bench_measures_every_shape_and_cleans_up(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "benchmarks.md"
    args = ["--redis-url", redis_url, "--entries", "200", "--repeats", "1", "--output", str(out)]
    assert main(args) == 0
    body = read_section(out, "log-retention")
    assert body is not None and "| dense d = 10 |" in body and "| named, 10 names |" in body
    assert "bytes" in retention_item(out)
    assert not list(redis_client.scan_iter(match="*bench-retention*"))
