"""Pending predictions: stored with their label window, counted, swept, limited."""

from __future__ import annotations

import time

import anyio
import pytest
import redis

from model_store import PendingLimitExceeded, RedisModelStore

from .factories import get_pending, pending

pytestmark = pytest.mark.anyio


async def test_put_then_get_returns_the_same_prediction(store: RedisModelStore) -> None:
    items = [pending("m", 1, seed) for seed in range(3)]
    await store.put_pending("m", 1, items, ttl_seconds=60, max_pending=None)
    for item in items:
        assert await get_pending(store, item.prediction_id) == item
    assert await store.count_pending("m", 1, time.time()) == 3


async def test_unknown_or_malformed_ids_are_none(store: RedisModelStore) -> None:
    item = pending("m", 1)
    await store.put_pending("m", 1, [item], ttl_seconds=60)
    assert await get_pending(store, pending("m", 1).prediction_id) is None
    assert await get_pending(store, "not an id") is None
    # same token, another time: not the stored prediction
    model, generation, rest = item.prediction_id.split(":")
    assert await get_pending(store, f"{model}:{generation}:1-{rest.split('-')[1]}") is None


async def test_pending_expires_after_the_window(store: RedisModelStore, redis_client: redis.Redis) -> None:
    now = time.time()
    item = pending("m", 1, at=now)
    await store.put_pending("m", 1, [item], ttl_seconds=1.0)
    ttl_ms = redis_client.pttl(f"acog:{{m}}:1:pending:{item.prediction_id[-16:]}")
    assert 0 < ttl_ms <= 1000
    assert await store.count_pending("m", 1, now + 0.5) == 1
    await anyio.sleep(now + 1.1 - time.time())
    assert await get_pending(store, item.prediction_id) is None
    assert await store.count_pending("m", 1, time.time()) == 0
    assert await store.sweep_expired("m", 1, time.time()) == 1
    assert await store.sweep_expired("m", 1, time.time()) == 0


async def test_sweep_counts_only_expired_predictions(store: RedisModelStore) -> None:
    now = time.time()
    old = [pending("m", 1, seed, at=now - 100) for seed in range(4)]
    fresh = [pending("m", 1, seed, at=now) for seed in range(2)]
    await store.put_pending("m", 1, old + fresh, ttl_seconds=50)
    assert await store.count_pending("m", 1, now) == 2
    assert await store.sweep_expired("m", 1, now) == 4
    assert await store.count_pending("m", 1, now) == 2


async def test_limit_exceeded_stores_nothing(store: RedisModelStore, redis_client: redis.Redis) -> None:
    await store.put_pending(
        "m", 1, [pending("m", 1, seed) for seed in range(3)], ttl_seconds=60, max_pending=5
    )
    keys_before = sorted(redis_client.keys("*"))
    batch = [pending("m", 1, seed) for seed in range(3)]
    with pytest.raises(PendingLimitExceeded) as info:
        await store.put_pending("m", 1, batch, ttl_seconds=60, max_pending=5)
    assert (info.value.limit, info.value.live, info.value.requested) == (5, 3, 3)
    assert sorted(redis_client.keys("*")) == keys_before
    for item in batch:
        assert await get_pending(store, item.prediction_id) is None
    await store.put_pending("m", 1, batch[:2], ttl_seconds=60, max_pending=5)  # exactly at the limit
    assert await store.count_pending("m", 1, time.time()) == 5


async def test_limit_ignores_expired_and_retried_items(store: RedisModelStore) -> None:
    now = time.time()
    await store.put_pending("m", 1, [pending("m", 1, 0, at=now - 100)], ttl_seconds=10, max_pending=1)
    batch = [pending("m", 1, 1)]
    await store.put_pending("m", 1, batch, ttl_seconds=60, max_pending=1)  # the expired one is not live
    await store.put_pending("m", 1, batch, ttl_seconds=60, max_pending=1)  # a retry is not counted twice
    assert await store.count_pending("m", 1, time.time()) == 1


async def test_ids_of_another_generation_are_refused(store: RedisModelStore) -> None:
    with pytest.raises(ValueError):
        await store.put_pending("m", 1, [pending("m", 2)], ttl_seconds=60)
