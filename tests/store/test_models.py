"""Model records, generations, and deleting a generation or a model."""

from __future__ import annotations

import time

import pytest
import redis

from model_store import ModelRecord, RedisModelStore

from .factories import example, pending

pytestmark = pytest.mark.anyio


async def test_generations_never_repeat(store: RedisModelStore) -> None:
    assert [await store.next_generation("m") for _ in range(3)] == [1, 2, 3]
    assert await store.next_generation("other") == 1
    await store.delete_model("m")
    assert await store.next_generation("m") == 4


async def test_records_round_trip(store: RedisModelStore) -> None:
    records = [
        ModelRecord("b", 2, {"algorithm": "acog", "eta": 0.1, "costs": [1, 2], "nested": {"x": None}}, 1.5),
        ModelRecord("a", 1, {}, time.time()),
    ]
    for record in records:
        await store.save_model(record)
    assert await store.load_models() == sorted(records, key=lambda r: r.name)
    replaced = ModelRecord("b", 3, {"algorithm": "pa"}, 2.0)
    await store.save_model(replaced)
    assert await store.load_models() == [records[1], replaced]


async def test_delete_generation_drops_its_log_checkpoints_and_index(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    for generation in (1, 2):
        await store.put_pending("m", generation, [pending("m", generation)], ttl_seconds=60)
        _, backlog = await store.append_examples("m", generation, [(example(0), 1)], time.time(), "0-0")
        await store.write_checkpoint("m", generation, b"state", backlog[-1].stream_id, keep=2)
    await store.delete_generation("m", 1)
    assert await store.log_info("m", 1) == (0, None, None)
    assert await store.load_checkpoints("m", 1) == []
    assert await store.count_pending("m", 1, time.time()) == 0
    assert (await store.log_info("m", 2)).length == 1
    assert [c.blob for c in await store.load_checkpoints("m", 2)] == [b"state"]
    assert not redis_client.keys("acog:{m}:1:log") and not redis_client.keys("acog:{m}:1:ckpt*")


async def test_delete_model_drops_every_generation(store: RedisModelStore, redis_client: redis.Redis) -> None:
    for _ in range(2):
        generation = await store.next_generation("m")
        await store.save_model(ModelRecord("m", generation, {}, 0.0))
        await store.append_examples("m", generation, [(example(0), 1)], time.time(), "0-0")
    await store.save_model(ModelRecord("n", 1, {}, 0.0))
    await store.delete_model("m")
    assert [r.name for r in await store.load_models()] == ["n"]
    assert not redis_client.keys("acog:{m}:*:log")
