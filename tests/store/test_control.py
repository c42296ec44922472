"""The control stream every replica follows (put, delete, checkpoint requests) and the store's identity,
on a single Redis and on a Redis Cluster."""

from __future__ import annotations

import asyncio

import pytest
import redis

from model_store import ControlEvent, RedisModelStore, StoreError, StoreIdentity, parse_stream_id

from .conftest import Backend

pytestmark = pytest.mark.anyio


async def test_life_cycle_events_in_order(any_store: RedisModelStore) -> None:
    store = any_store
    assert await store.control_position() == "0-0"
    assert await store.follow_control("0-0", 0.05) == []
    await store.put_model("a", {}, 1.0, None)
    await store.put_model("b", {}, 1.0, 0)
    await store.put_model("a", {}, 2.0, 1)
    await store.request_checkpoint("a", 2)
    await store.delete_model("b")
    await store.delete_model("b")  # nothing to delete: nothing announced
    events = await store.follow_control("0-0", 1.0)
    assert [(e.op, e.model, e.generation) for e in events] == [
        ("put", "a", 1),
        ("put", "b", 1),
        ("put", "a", 2),
        ("checkpoint", "a", 2),
        ("delete", "b", 1),
    ]
    ids = [parse_stream_id(e.event_id) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert await store.control_position() == events[-1].event_id
    # following from an event gives what came after it
    assert await store.follow_control(events[2].event_id, 1.0) == events[3:]
    assert await store.follow_control(events[-1].event_id, 0.05) == []


async def test_refused_puts_announce_nothing(any_store: RedisModelStore) -> None:
    await any_store.put_model("a", {}, 1.0, 0)
    position = await any_store.control_position()
    for expected in (0, 2):
        with pytest.raises(StoreError):
            await any_store.put_model("a", {}, 2.0, expected)
    assert await any_store.control_position() == position


async def test_a_follower_wakes_on_another_replicas_announcement(
    any_store: RedisModelStore, backend: Backend
) -> None:
    other = RedisModelStore.from_url(backend.url)
    try:
        await other.put_model("warm-up", {}, 1.0, None)  # (its client has found the shards)
        position = await any_store.control_position()
        follower = asyncio.create_task(any_store.follow_control(position, 60.0))
        await asyncio.sleep(0.3)
        assert not follower.done()
        record = await other.put_model("m", {}, 1.0, None)
        # woken by the announcement: a block that ran out first would have answered nothing
        (event,) = await asyncio.wait_for(follower, 5.0)
        assert event == ControlEvent(event.event_id, "put", "m", record.generation)
    finally:
        await other.close()


async def test_events_of_a_newer_version_are_skipped(any_store: RedisModelStore, backend: Backend) -> None:
    backend.client.xadd("acog:{acog}:control", {"op": "rename", "model": "m", "generation": 1})
    await any_store.request_checkpoint("m", 1)
    assert [e.op for e in await any_store.follow_control("0-0", 1.0)] == ["checkpoint"]


async def test_identity_is_created_once_and_stable(any_store: RedisModelStore, backend: Backend) -> None:
    assert await any_store.identity(create=False) is None
    others = [RedisModelStore.from_url(backend.url) for _ in range(3)]
    try:
        created = await asyncio.gather(*(store.identity(create=True) for store in [any_store, *others]))
        first = created[0]
        assert isinstance(first, StoreIdentity) and first.layout == 2 and len(first.epoch) == 16
        assert created == [first] * 4  # concurrent creators agree on one epoch
        assert await any_store.identity(create=True) == first
        assert await others[0].identity(create=False) == first
        await any_store.put_model("m", {}, 1.0, None)
        assert await any_store.identity(create=False) == first
    finally:
        for store in others:
            await store.close()


async def test_a_malformed_identity_is_an_error(store: RedisModelStore, redis_client: redis.Redis) -> None:
    redis_client.hset("acog:{acog}:identity", mapping={"epoch": "e", "layout": "two"})
    with pytest.raises(StoreError, match="identity"):
        await store.identity(create=False)


async def test_an_identity_half_written_is_completed_not_malformed_for_ever(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    """A first start that stopped between writing the epoch and the layout: the next start (which
    creates) completes it, keeping the epoch, instead of failing on it at every start."""
    redis_client.hset("acog:{acog}:identity", "epoch", "0123456789abcdef")
    assert await store.identity(create=True) == StoreIdentity("0123456789abcdef", 2)
    assert await store.identity(create=False) == StoreIdentity("0123456789abcdef", 2)
