"""The embedded Redis: private, persistent across close and reopen, usable by the store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from model_store import EmbeddedRedis, RedisModelStore, open_store

from .factories import example, log_sequence

pytestmark = pytest.mark.anyio


def test_data_survives_close_and_reopen(tmp_path: Path) -> None:
    data_dir = tmp_path / "not" / "yet" / "there"
    with EmbeddedRedis(data_dir) as server:
        assert server.url.startswith("unix://")
        client = redis.Redis.from_url(server.url)
        entry_id = client.xadd("acog:{m}:1:log", {"pid": "p", "y": "1"})
        config = {
            key: client.config_get(key)[key] for key in ("appendonly", "appendfsync", "maxmemory-policy")
        }
        client.close()
        pid = server.pid
    assert config == {"appendonly": "yes", "appendfsync": "everysec", "maxmemory-policy": "noeviction"}
    assert server.pid == 0 and pid > 0
    assert (data_dir / "appendonly.aof").exists()
    with EmbeddedRedis(data_dir) as server:
        client = redis.Redis.from_url(server.url)
        assert client.xrange("acog:{m}:1:log") == [(entry_id, {b"pid": b"p", b"y": b"1"})]
        client.close()


async def test_open_store_without_url_runs_on_an_embedded_redis(tmp_path: Path) -> None:
    store, embedded = open_store(None, tmp_path / "data")
    assert embedded is not None
    try:
        await store.ping()
        await store.put_model("m", {}, time.time(), 0)
        ids, _ = await store.append_examples("m", 1, [(example(1), 1)], time.time())
    finally:
        await store.close()
        embedded.close()
    embedded.close()  # idempotent
    store, embedded = open_store("", tmp_path / "data")
    assert embedded is not None
    try:
        assert [(e.prediction_id, e.seq) for e in await store.read_log("m", 1, "0-0", 10)] == [(ids[0], 1)]
        assert await log_sequence(store, "m", 1) == 1
    finally:
        await store.close()
        embedded.close()


async def test_open_store_with_a_url_starts_nothing(tmp_path: Path, redis_url: str) -> None:
    store, embedded = open_store(redis_url, tmp_path / "unused")
    try:
        assert embedded is None and isinstance(store, RedisModelStore)
        assert not (tmp_path / "unused").exists()
        await store.ping()
    finally:
        await store.close()
