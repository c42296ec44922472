"""bench.service_load's settle step, against a real append-only Redis of its own: the open loop
starts from a freshly rewritten AOF with no rewrite in progress and no fsync pending."""

from __future__ import annotations

from pathlib import Path

import redis

from bench.service_load import settle_redis

from .support.private_redis import PrivateRedis


def test_settle_rewrites_the_aof_and_waits_for_it(tmp_path: Path) -> None:
    server = PrivateRedis(tmp_path)  # append-only, everysec: the bench's Redis
    server.start()
    try:
        client = redis.Redis.from_url(server.url)
        client.mset({f"k{i}": "x" * 512 for i in range(20_000)})
        before = int(client.info("persistence")["aof_rewrites"])
        waited = settle_redis(server.url)
        info = client.info("persistence")
        assert waited >= 0.3  # three quiet polls, 0.1 s apart
        assert int(info["aof_rewrites"]) == before + 1
        assert not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]
        assert info["aof_last_bgrewrite_status"] == "ok"
        assert settle_redis(server.url) < 10  # nothing written since: a small rewrite, quickly done
        assert int(client.info("persistence")["aof_rewrites"]) == before + 2
        assert settle_redis(server.url, rewrite=False) < 10  # waits only: no rewrite started
        assert int(client.info("persistence")["aof_rewrites"]) == before + 2
        client.close()
    finally:
        server.close()
