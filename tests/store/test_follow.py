"""Following the log: a blocking read that wakes on another client's append, and the whole path of a
replica (label on one, follow on another, checkpoint under the lease, trim, resume after a gap) on a
single Redis and on a Redis Cluster."""

from __future__ import annotations

import asyncio
import time

import pytest
from redis import Redis

from model_store import ConnectionSettings, LogEntry, RedisModelStore

from .conftest import Backend
from .factories import HOLDER, WINDOW, append, label, new_model, pending

pytestmark = pytest.mark.anyio


async def test_follow_log_blocks_and_wakes_on_an_append_from_another_client(
    any_store: RedisModelStore, backend: Backend
) -> None:
    other = RedisModelStore.from_url(backend.url)  # another replica
    try:
        await new_model(other)  # (its client has found the shards and loaded its scripts)
        follower = asyncio.create_task(any_store.follow_log("m", 1, "0-0", 100, 60.0))
        await asyncio.sleep(0.3)
        assert not follower.done()  # blocked: nothing to read yet
        (entry,) = await append(other, 1)
        entries = await asyncio.wait_for(follower, 5.0)
        # woken by the append: a block that ran out first would have answered nothing
        assert [(e.stream_id, e.seq) for e in entries] == [entry]
    finally:
        await other.close()


async def test_follow_log_returns_what_is_there_without_waiting(redis_client: Redis, redis_url: str) -> None:
    """(``redis_client`` empties the test database around it.)"""
    store = RedisModelStore.from_url(redis_url, ConnectionSettings(socket_timeout=60.0))
    try:
        await new_model(store)
        entries = await append(store, 5)
        started = time.monotonic()
        first = await store.follow_log("m", 1, "0-0", 3, 20.0)
        rest = await store.follow_log("m", 1, first[-1].stream_id, 100, 20.0)
        assert time.monotonic() - started < 10.0  # neither waited its 20 s
        assert [(e.stream_id, e.seq) for e in first + rest] == entries
        assert first + rest == await store.read_log("m", 1, "0-0", 100)
    finally:
        await store.close()


async def test_follow_log_gives_nothing_after_its_block(store: RedisModelStore) -> None:
    await new_model(store)
    (entry,) = await append(store, 1)
    started = time.monotonic()
    assert await store.follow_log("m", 1, entry.stream_id, 10, 0.2) == []
    assert 0.19 <= time.monotonic() - started < 5.0
    with pytest.raises(ValueError):
        await store.follow_log("m", 1, "$", 10, 0.2)  # a position is a stream id


async def test_label_follow_checkpoint_trim_and_resume(any_store: RedisModelStore, backend: Backend) -> None:
    """Replica A labels; replica B follows every entry in order, holds the lease and checkpoints;
    the log is trimmed below the retained checkpoint, and a new replica sees the gap in the sequence
    numbers, loads the checkpoint and follows on from it."""
    a = any_store
    b = RedisModelStore.from_url(backend.url)
    try:
        await new_model(a)
        items = [pending("m", 1, seed) for seed in range(6)]
        await a.put_pending("m", 1, items, ttl_seconds=WINDOW)
        seen: list[LogEntry] = []
        for batch in (items[:2], items[2:5], items[5:]):
            outcomes = await label(a, [(p.prediction_id, 1) for p in batch])
            assert {o.status for o in outcomes} == {"appended"}
            after = seen[-1].stream_id if seen else "0-0"
            seen += await b.follow_log("m", 1, after, 100, 1.0)
        assert [e.seq for e in seen] == [1, 2, 3, 4, 5, 6]
        assert [e.prediction_id for e in seen] == [p.prediction_id for p in items]

        assert await b.lease("m", 1, HOLDER, 30) == HOLDER
        assert await a.lease("m", 1, "replica-a-other", 30) == HOLDER  # A may not write now
        at = seen[3]
        state = b"state after 4 labels"
        assert await b.write_checkpoint("m", 1, state, at.stream_id, 4, 123.5, 1, HOLDER)
        assert [(m.applied_id, m.seq, m.written_at) for m in await a.checkpoint_index("m", 1)] == [
            (at.stream_id, 4, 123.5)
        ]
        # trimmed below the retained checkpoint: its own entry stays
        assert [e.seq for e in await a.read_log("m", 1, "0-0", 100)] == [4, 5, 6]

        # a new replica from scratch sees seq 4 first: entries 1-3 are gone, so it loads a checkpoint
        newcomer = await a.follow_log("m", 1, "0-0", 100, 1.0)
        assert newcomer[0].seq == 4
        (checkpoint,) = await a.load_checkpoints("m", 1)
        assert (checkpoint.applied_id, checkpoint.seq, checkpoint.blob) == (at.stream_id, 4, state)
        resumed = await a.follow_log("m", 1, checkpoint.applied_id, 100, 1.0)
        assert [e.seq for e in resumed] == [5, 6]
        assert resumed == seen[4:]
        await b.release_lease("m", 1, HOLDER)
        assert await a.lease("m", 1, "replica-c", 30) == "replica-c"
    finally:
        await b.close()


async def test_a_block_longer_than_the_socket_timeout_is_cut_short_not_an_outage(redis_url: str) -> None:
    """``follow_log``/``follow_control`` wait *up to* their block: asked to wait longer than the
    client's socket timeout, they come back empty before it (the socket would time out first and
    the read would look like a Redis outage)."""
    store = RedisModelStore.from_url(redis_url, ConnectionSettings(socket_timeout=1.0, retries=0))
    try:
        await new_model(store)
        started = time.monotonic()
        assert await store.follow_log("m", 1, "0-0", 10, 3.0) == []
        assert await store.follow_control(await store.control_position(), 3.0) == []
        assert time.monotonic() - started < 4.0  # each waited at most 0.5 s
        follower = asyncio.create_task(store.follow_log("m", 1, "0-0", 10, 30.0))
        await asyncio.sleep(0.1)
        (entry,) = await append(store, 1)
        assert [(e.stream_id, e.seq) for e in await asyncio.wait_for(follower, 1.0)] == [entry]
    finally:
        await store.close()
