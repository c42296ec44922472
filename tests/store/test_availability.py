"""A Redis outage surfaces as StoreUnavailable, and the same store works again once Redis is back."""

from __future__ import annotations

import time

import pytest
import redis

from model_store import ConnectionSettings, RedisModelStore, StoreUnavailable

from ..support.private_redis import PrivateRedis
from .factories import pending

pytestmark = pytest.mark.anyio

FAST = ConnectionSettings(socket_timeout=1.0, connect_timeout=0.5, retries=1)


async def test_outage_and_recovery(private_redis: PrivateRedis) -> None:
    store = RedisModelStore.from_url(private_redis.url, FAST)
    try:
        first = pending("m", 1, 0)
        await store.put_pending("m", 1, [first], ttl_seconds=60)
        outcomes, _ = await store.label("m", 1, [(first.prediction_id, 1)], time.time(), "0-0", 60, 60)
        assert outcomes[0].status == "appended"

        private_redis.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as info:
            await store.ping()
        assert info.value.retry_after > 0
        second = pending("m", 1, 1)
        with pytest.raises(StoreUnavailable):
            await store.put_pending("m", 1, [second], ttl_seconds=60)
        with pytest.raises(StoreUnavailable):
            await store.label("m", 1, [(second.prediction_id, 1)], time.time(), "0-0", 60, 60)
        with pytest.raises(StoreUnavailable):
            await store.load_checkpoints("m", 1)
        assert time.monotonic() - started < 10

        private_redis.start()  # same port, same data dir: the AOF brings the label back
        await store.ping()
        assert [e.prediction_id for e in await store.read_log("m", 1, "0-0", 10)] == [first.prediction_id]
        # the scripts were lost with the restart; redis-py loads them again on NOSCRIPT
        await store.put_pending("m", 1, [second], ttl_seconds=60)
        outcomes, backlog = await store.label(
            "m", 1, [(second.prediction_id, -1)], time.time(), "0-0", 60, 60
        )
        assert outcomes[0].status == "appended" and len(backlog) == 2
    finally:
        await store.close()


async def test_scripts_survive_a_script_flush(store: RedisModelStore, redis_client: redis.Redis) -> None:
    p, q = pending("m", 1, 0), pending("m", 1, 1)
    await store.put_pending("m", 1, [p], ttl_seconds=60)
    redis_client.script_flush()
    await store.put_pending("m", 1, [q], ttl_seconds=60)
    redis_client.script_flush()
    outcomes, _ = await store.label(
        "m", 1, [(p.prediction_id, 1), (q.prediction_id, 1)], time.time(), "0-0", 60, 60
    )
    assert [o.status for o in outcomes] == ["appended", "appended"]


async def test_unreachable_url_is_unavailable() -> None:
    store = RedisModelStore.from_url("redis://127.0.0.1:1/0", FAST)
    try:
        with pytest.raises(StoreUnavailable):
            await store.ping()
    finally:
        await store.close()


async def test_loading_and_read_only_replies_are_unavailable(private_redis: PrivateRedis) -> None:
    """A replica (read-only) refuses writes: that is 'cannot serve now', not a bad request."""
    admin = redis.Redis(port=private_redis.port)
    store = RedisModelStore.from_url(private_redis.url, FAST)
    try:
        admin.execute_command("CONFIG", "SET", "replica-read-only", "yes")
        admin.execute_command("REPLICAOF", "127.0.0.1", "1")  # a master that is never there
        with pytest.raises(StoreUnavailable):
            await store.put_pending("m", 1, [pending("m", 1)], ttl_seconds=60)
    finally:
        admin.execute_command("REPLICAOF", "NO", "ONE")
        admin.close()
        await store.close()
