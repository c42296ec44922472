"""put_model_from_state: a new generation and its first checkpoint in one step (what a rollback
writes), or nothing at all."""

from __future__ import annotations

import time

import pytest
import redis

from model_store import GenerationGone, RedisModelStore

from .factories import new_model, snapshot

pytestmark = pytest.mark.anyio


async def test_the_new_generation_starts_with_its_checkpoint(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    await new_model(store)
    blob = bytes(range(256)) * 4000  # several chunks at the tests' chunk size, or one
    record = await store.put_model_from_state("m", {"algorithm": "acog"}, 5.0, 1, blob, 4.5)
    assert (record.generation, record.config) == (2, {"algorithm": "acog"})
    loaded = await store.load_model("m")
    assert loaded is not None and loaded.generation == 2
    assert await store.load_checkpoints("m", 2) == [("0-0", 0, blob)]
    assert await store.checkpoint_index("m", 2) == [("0-0", 0, 4.5)]
    assert not [k for k in redis_client.keys("*ckpt:*") if redis_client.pttl(k) > 0]  # nothing staged left
    events = await store.follow_control("0-0", 0.01)
    assert [(e.op, e.generation) for e in events][-1] == ("put", 2)


async def test_another_current_generation_refuses_it_and_nothing_changes(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    await new_model(store)
    await new_model(store)  # generation 2 is current
    before = snapshot(redis_client)
    with pytest.raises(GenerationGone):
        await store.put_model_from_state("m", {"algorithm": "acog"}, time.time(), 1, b"state", 1.0)
    after = snapshot(redis_client)
    assert {k: v for k, v in after.items() if b"control" not in k} == {
        k: v for k, v in before.items() if b"control" not in k
    }
