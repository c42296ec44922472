"""A Redis outage surfaces as StoreUnavailable, the same store works again once Redis is back (with
its sequence numbers and first outcomes, through the AOF), scripts are re-loaded after SCRIPT FLUSH,
and ``check_writable`` tells when Redis refuses writes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import redis

from model_store import ConnectionSettings, RedisModelStore, StoreUnavailable
from model_store.keys import WRITE_PROBE_PREFIX

from ..support.private_redis import PrivateRedis
from .conftest import Backend
from .factories import HOLDER, WINDOW, append, label, log_sequence, new_model, pending

pytestmark = pytest.mark.anyio

FAST = ConnectionSettings(socket_timeout=1.0, connect_timeout=0.5, retries=1)


async def test_outage_and_recovery(private_redis: PrivateRedis) -> None:
    store = RedisModelStore.from_url(private_redis.url, FAST)
    try:
        await new_model(store)
        first = pending("m", 1, 0)
        await store.put_pending("m", 1, [first], ttl_seconds=WINDOW)
        (outcome,) = await label(store, [(first.prediction_id, 1)])
        assert outcome.status == "appended"

        private_redis.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as info:
            await store.ping()
        assert info.value.retry_after > 0
        second = pending("m", 1, 1)
        with pytest.raises(StoreUnavailable):
            await store.put_pending("m", 1, [second], ttl_seconds=WINDOW)
        with pytest.raises(StoreUnavailable):
            await label(store, [(second.prediction_id, 1)])
        with pytest.raises(StoreUnavailable):
            await store.follow_log("m", 1, "0-0", 10, 0.1)
        with pytest.raises(StoreUnavailable):
            await store.load_checkpoints("m", 1)
        with pytest.raises(StoreUnavailable):
            await store.check_writable()
        assert time.monotonic() - started < 10

        private_redis.start()  # same port, same data dir: the AOF brings the label back
        await store.ping()
        await store.check_writable()
        assert [e.prediction_id for e in await store.read_log("m", 1, "0-0", 10)] == [first.prediction_id]
        # the scripts were lost with the restart; redis-py loads them again on NOSCRIPT
        await store.put_pending("m", 1, [second], ttl_seconds=WINDOW)
        (outcome,) = await label(store, [(second.prediction_id, -1)])
        assert (outcome.status, outcome.seq) == ("appended", 2)
    finally:
        await store.close()


async def test_sequence_numbers_and_first_outcomes_survive_a_crash_of_redis(tmp_path: Path) -> None:
    """kill -9 of Redis, then a restart on its append-only file: the log, its sequence counter, the
    done markers (first outcomes), the identity and the lease are all back; numbering goes on."""
    server = PrivateRedis(tmp_path, appendfsync="always")
    server.start()
    store = RedisModelStore.from_url(server.url, FAST)
    try:
        identity = await store.identity(create=True)
        await new_model(store)
        items = [pending("m", 1, seed) for seed in range(2)]
        await store.put_pending("m", 1, items, ttl_seconds=WINDOW)
        first = await label(store, [(p.prediction_id, 1) for p in items])
        event, _ = await store.append_event("m", 1, "migration", b"body", "request-1", time.time())
        assert await store.lease("m", 1, HOLDER, 60) == HOLDER
        before = await store.read_log("m", 1, "0-0", 10)
        assert [e.seq for e in before] == [1, 2, 3]

        server.stop()  # SIGKILL
        server.start()
        assert await store.identity(create=False) == identity
        assert await store.read_log("m", 1, "0-0", 10) == before
        assert await log_sequence(store, "m", 1) == 3
        retried = await label(store, [(items[0].prediction_id, 1), (items[1].prediction_id, -1)])
        assert [(o.status, o.stream_id, o.seq, o.labelled_at) for o in retried] == [
            ("duplicate", first[0].stream_id, 1, first[0].labelled_at),
            ("conflict", first[1].stream_id, 2, first[1].labelled_at),
        ]
        assert await store.append_event("m", 1, "migration", b"body", "request-1", time.time()) == (
            event,
            False,
        )
        assert await store.lease("m", 1, "replica-b", 60) == HOLDER
        assert [e.seq for e in await append(store, 2)] == [4, 5]
    finally:
        await store.close()
        server.close()


async def test_scripts_are_loaded_again_after_a_script_flush(
    any_store: RedisModelStore, backend: Backend
) -> None:
    """Every script-backed call works right after SCRIPT FLUSH (redis-py re-loads on NOSCRIPT)."""
    store = any_store

    def flush() -> None:
        backend.client.script_flush()

    await new_model(store)
    flush()
    p, q = pending("m", 1, 0), pending("m", 1, 1)
    await store.put_pending("m", 1, [p, q], ttl_seconds=WINDOW)
    flush()
    outcomes = await label(store, [(p.prediction_id, 1), (q.prediction_id, 1)])
    assert [o.status for o in outcomes] == ["appended", "appended"]
    flush()
    (entry,) = await append(store, 1)
    flush()
    _, new = await store.append_event("m", 1, "migration", b"", "request", time.time())
    assert new
    flush()
    assert await store.lease("m", 1, HOLDER, 60) == HOLDER
    flush()
    assert await store.write_checkpoint("m", 1, b"state", entry.stream_id, 3, time.time(), 1, HOLDER)
    flush()
    await store.release_lease("m", 1, HOLDER)
    flush()
    assert await new_model(store) == 2
    flush()
    await store.delete_generation("m", 1)
    flush()
    assert await store.delete_model("m") == 2
    assert await store.load_models() == []


async def test_unreachable_redis_is_unavailable() -> None:
    for url in ("redis://127.0.0.1:1/0", "redis+cluster://127.0.0.1:1/0"):
        store = RedisModelStore.from_url(url, FAST)
        try:
            with pytest.raises(StoreUnavailable):
                await store.ping()
        finally:
            await store.close()


async def test_a_read_only_replica_refuses_writes(private_redis: PrivateRedis) -> None:
    """A replica (read-only) refuses writes: that is 'cannot serve now', not a bad request."""
    admin = redis.Redis(port=private_redis.port)
    store = RedisModelStore.from_url(private_redis.url, FAST)
    try:
        await new_model(store)
        await store.check_writable()
        admin.execute_command("CONFIG", "SET", "replica-read-only", "yes")
        admin.execute_command("REPLICAOF", "127.0.0.1", "1")  # a master that is never there
        with pytest.raises(StoreUnavailable, match="read only"):
            await store.check_writable()
        with pytest.raises(StoreUnavailable):
            await store.put_pending("m", 1, [pending("m", 1)], ttl_seconds=WINDOW)
        with pytest.raises(StoreUnavailable):
            await append(store, 1)
        admin.execute_command("REPLICAOF", "NO", "ONE")
        await store.check_writable()
    finally:
        admin.execute_command("REPLICAOF", "NO", "ONE")
        admin.close()
        await store.close()


async def test_check_writable_when_redis_is_out_of_memory(private_redis: PrivateRedis) -> None:
    """``maxmemory`` reached under ``noeviction``: Redis refuses writes, and check_writable says so
    (without writing anything lasting when it can write)."""
    admin = redis.Redis(port=private_redis.port)
    store = RedisModelStore.from_url(private_redis.url, FAST)
    try:
        await new_model(store)
        await store.check_writable()
        await asyncio.sleep(0.05)
        assert not admin.keys("*probe*")  # the probe expired at once
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", 1)  # below what Redis already uses
        with pytest.raises(StoreUnavailable, match="maxmemory"):
            await store.check_writable()
        with pytest.raises(StoreUnavailable):
            await append(store, 1)
        assert await store.load_model("m") is not None  # reads still work
        admin.config_set("maxmemory", 0)
        await store.check_writable()
        assert [e.seq for e in await append(store, 1)] == [1]
        await asyncio.sleep(0.05)
        assert not admin.keys("*probe*")
    finally:
        admin.close()
        await store.close()


async def test_a_write_probe_is_not_lost_data(any_store: RedisModelStore, backend: Backend) -> None:
    """A replica starting beside another may find that one's write probe (a key with a 1 ms expiry,
    still there under load) before any identity exists: an empty store, not one that lost data."""
    assert await any_store.identity(create=False) is None
    await any_store.check_writable()
    backend.client.set(f"{WRITE_PROBE_PREFIX}0badcafe", b"1", px=60_000)  # a probe not expired yet
    assert await any_store.leftover_key() is None
    backend.client.set("acog:{cards}:gen", b"3")
    assert await any_store.leftover_key() == "acog:{cards}:gen"
