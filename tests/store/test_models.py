"""Model records and generations: put (with its expected generation), load, delete, and dropping a
generation's data. The records and life cycle run on a single Redis and on a Redis Cluster."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from model_store import Appended, GenerationGone, ModelRecord, RedisModelStore

from .conftest import Backend
from .factories import HOLDER, append, log_sequence, new_model, pending, snapshot

pytestmark = pytest.mark.anyio


def names_on_every_shard(backend: Backend, count: int = 3) -> list[str]:
    """``count`` model names whose keys live on different shards of a cluster (any names on one Redis)."""
    chosen: dict[int | None, str] = {}
    for i in range(1000):
        name = f"model-{i}"
        port = backend.port_of(f"acog:{{{name}}}:model")
        if port is None:
            return [f"model-{j}" for j in range(count)]
        chosen.setdefault(port, name)
        if len(chosen) == count:
            return sorted(chosen.values())
    raise AssertionError(f"no {count} names on different shards")


async def test_models_on_every_shard_put_load_and_delete(
    any_store: RedisModelStore, backend: Backend
) -> None:
    names = names_on_every_shard(backend)
    if backend.name == "cluster":
        assert len({backend.port_of(f"acog:{{{name}}}:model") for name in names}) == 3
    records = [
        await any_store.put_model(name, {"algorithm": "acog", "eta": i / 10}, 100.0 + i, None)
        for i, name in enumerate(names)
    ]
    assert [r.generation for r in records] == [1, 1, 1]
    assert await any_store.load_models() == records
    for record in records:
        assert await any_store.load_model(record.name) == record
        assert await any_store.last_generation(record.name) == 1
    replaced = await any_store.put_model(names[1], {"algorithm": "pa"}, 200.0, 1)
    assert replaced == ModelRecord(names[1], 2, {"algorithm": "pa"}, 200.0)
    assert await any_store.delete_model(names[0]) == 1
    assert await any_store.load_models() == [replaced, records[2]]
    assert await any_store.load_model(names[0]) is None
    assert await any_store.delete_model(names[0]) is None  # nothing left to delete
    assert await any_store.last_generation(names[0]) == 1  # the counter outlives the record
    assert await any_store.load_model("never") is None and await any_store.last_generation("never") == 0


async def test_records_round_trip_exactly(store: RedisModelStore) -> None:
    config = {"algorithm": "acog", "eta": 0.1, "costs": [1, 2.5], "nested": {"x": None, "y": "é"}}
    record = await store.put_model("b", config, 1.5, None)
    other = await store.put_model("a", {}, 1700000000.123456, 0)
    assert record == ModelRecord("b", 1, config, 1.5)
    assert other.created_at == 1700000000.123456
    assert await store.load_models() == [other, record]  # sorted by name
    assert await store.load_model("b") == record


async def test_generations_never_repeat_across_delete_and_re_create(store: RedisModelStore) -> None:
    assert [(await store.put_model("m", {}, 0.0, None)).generation for _ in range(3)] == [1, 2, 3]
    assert (await store.put_model("other", {}, 0.0, None)).generation == 1
    assert await store.delete_model("m") == 3
    assert await store.last_generation("m") == 3
    assert (await store.put_model("m", {}, 0.0, 0)).generation == 4
    assert await store.delete_model("m") == 4
    assert await store.delete_model("m") is None
    assert (await store.put_model("m", {}, 0.0, None)).generation == 5
    assert await store.last_generation("m") == 5


async def test_expected_generation_zero_creates_only(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    created = await store.put_model("m", {"v": 1}, 1.0, 0)
    assert created.generation == 1
    before = snapshot(redis_client)
    with pytest.raises(GenerationGone) as info:
        await store.put_model("m", {"v": 2}, 2.0, 0)
    assert (info.value.model, info.value.generation, info.value.current) == ("m", 0, 1)
    assert snapshot(redis_client) == before  # no record, counter or control event changed
    assert await store.load_model("m") == created


async def test_expected_generation_mismatch_changes_nothing(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    await store.put_model("m", {"v": 1}, 1.0, None)
    second = await store.put_model("m", {"v": 2}, 2.0, 1)  # the expected one: replaced
    assert second.generation == 2
    before = snapshot(redis_client)
    for stale in (1, 3):
        with pytest.raises(GenerationGone) as info:
            await store.put_model("m", {"v": 3}, 3.0, stale)
        assert (info.value.generation, info.value.current) == (stale, 2)
    assert snapshot(redis_client) == before
    assert await store.load_model("m") == second and await store.last_generation("m") == 2
    # a deleted model: the current generation is none
    await store.delete_model("m")
    with pytest.raises(GenerationGone) as info:
        await store.put_model("m", {"v": 4}, 4.0, 2)
    assert info.value.current is None
    assert await store.load_model("m") is None
    assert (await store.put_model("m", {"v": 5}, 5.0, 0)).generation == 3


async def test_delete_generation_drops_its_log_checkpoints_lease_and_pending(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    for generation in (1, 2):
        assert await new_model(store) == generation
        await store.put_pending("m", generation, [pending("m", generation)], ttl_seconds=60)
        entries = await append(store, 2, generation=generation)
        assert await store.lease("m", generation, HOLDER, 60) == HOLDER
        assert await store.write_checkpoint(
            "m", generation, b"state", entries[-1].stream_id, 2, time.time(), 2, HOLDER
        )
    await store.delete_generation("m", 1)
    assert await store.read_log("m", 1, "0-0", 10) == []
    assert await log_sequence(store, "m", 1) == 0
    assert await store.checkpoint_index("m", 1) == []
    assert await store.load_checkpoints("m", 1) == []
    assert await store.count_pending("m", 1, time.time()) == 0
    assert await store.lease("m", 1, "replica-b", 60) == "replica-b"  # the old lease went too
    assert not redis_client.keys("acog:{m}:1:log") and not redis_client.keys("acog:{m}:1:ckpt*")
    assert not redis_client.keys("acog:{m}:1:seq")
    # generation 2 is untouched (its log trimmed to its checkpoint's entry by the checkpoint)
    assert [e.seq for e in await store.read_log("m", 2, "0-0", 10)] == [2]
    assert await log_sequence(store, "m", 2) == 2
    assert [c.blob for c in await store.load_checkpoints("m", 2)] == [b"state"]


async def test_delete_model_drops_every_generation(store: RedisModelStore, redis_client: redis.Redis) -> None:
    for generation in (1, 2):
        assert await new_model(store) == generation
        await append(store, 1, generation=generation)
    await new_model(store, "n")
    await append(store, 1, model="n")
    assert await store.delete_model("m") == 2
    assert [r.name for r in await store.load_models()] == ["n"]
    assert not redis_client.keys("acog:{m}:*:log") and not redis_client.keys("acog:{m}:model")
    assert redis_client.get("acog:{m}:generations") == b"2"  # kept: generations never repeat
    assert len(await store.read_log("n", 1, "0-0", 10)) == 1


@pytest.mark.parametrize("put_after", ["the record is deleted", "the name is unlisted"])
async def test_a_model_re_created_during_its_deletion_keeps_its_record_and_log(
    store: RedisModelStore, redis_url: str, monkeypatch: pytest.MonkeyPatch, put_after: str
) -> None:
    """Replica A deletes the model while replica B creates it again and acknowledges a label: the
    new generation stays listed and keeps its log; only the deleted generations' data goes."""
    other = RedisModelStore.from_url(redis_url)
    try:
        await new_model(store)
        await append(store, 2)
        created: list[tuple[ModelRecord, Appended]] = []

        async def another_replica_puts() -> None:
            record = await other.put_model("m", {"v": 2}, 2.0, 0)
            (entry,) = await append(other, 1, generation=record.generation)
            created.append((record, entry))

        if put_after == "the record is deleted":
            delete_script = store._delete_model

            async def delete_then_put(
                keys: list[str], args: list[Any] | None = None, client: Any = None
            ) -> Any:
                answer = await delete_script(keys=keys, args=args or [])
                await another_replica_puts()
                return answer

            monkeypatch.setattr(store, "_delete_model", delete_then_put)
        else:
            srem = store._redis.srem

            async def unlist_then_put(*args: Any) -> Any:
                answer = await srem(*args)
                await another_replica_puts()
                return answer

            monkeypatch.setattr(store._redis, "srem", unlist_then_put)
        assert await store.delete_model("m") == 1
        ((record, entry),) = created
        assert record.generation == 2
        assert await store.load_models() == [record]
        assert [(e.stream_id, e.seq) for e in await store.read_log("m", 2, "0-0", 10)] == [entry]
        assert await log_sequence(store, "m", 2) == 1
        assert await store.read_log("m", 1, "0-0", 10) == []  # the deleted generation's log went
    finally:
        await other.close()
