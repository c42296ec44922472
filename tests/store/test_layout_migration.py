"""The layout-1 migration: a store written by the previous key layout (one ``acog:models`` hash of
JSON records, one ``acog:generations`` hash, logs without sequence numbers, done markers holding a
stream id alone, 4-field checkpoint manifests) is read, adopted model by model, then retired.

The layout-1 store is written here by raw Redis commands, as the previous release wrote it."""

from __future__ import annotations

import json
import time
from typing import NamedTuple, cast

import pytest
import redis

from model_store import (
    GenerationGone,
    Manifest,
    ModelRecord,
    RedisModelStore,
    encode_example,
    make_prediction_id,
    parse_prediction_id,
)

from ..support.redis_cluster import RedisClusterProcesses
from .conftest import flush_cluster
from .factories import DONE_TTL, HOLDER, WINDOW, example, label, log_sequence, pending

pytestmark = pytest.mark.anyio

A = ModelRecord("a", 2, {"algorithm": "acog", "eta": 0.5}, 1700000000.25)
B = ModelRecord("b", 1, {"algorithm": "pa"}, 1700000001.5)


def record_json(record: ModelRecord) -> str:
    """A layout-1 record, as the previous release spelled it."""
    return json.dumps(
        {
            "name": record.name,
            "generation": record.generation,
            "config": record.config,
            "created_at": record.created_at,
        }
    )


class Layout1(NamedTuple):
    """What :func:`write_layout_1` wrote of model a generation 2: its prediction ids and stream ids
    (in log order) and its checkpoint's blob (the state after the second entry)."""

    pids: list[str]
    ids: list[str]
    blob: bytes


def write_layout_1(client: redis.Redis) -> Layout1:
    """Model a at generation 2 (3 issued) with 3 labels, one checkpoint and one done marker; model b
    at generation 1 with no entry in the generations hash."""
    client.hset("acog:models", mapping={"b": record_json(B), "a": record_json(A)})
    client.hset("acog:generations", "a", 3)
    now = time.time()
    pids = [make_prediction_id("a", 2, now - 10 + i) for i in range(3)]
    ids = []
    for i, pid in enumerate(pids):
        fields: dict[str, bytes | str] = {
            "pid": pid,
            "x": encode_example(example(i)),
            "y": "1",
            "yhat": "-1",
            "tp": repr(now - 10 + i),
            "tl": repr(now - 5 + i),
        }
        ids.append(cast(bytes, client.xadd("acog:{a}:2:log", fields)).decode())  # type: ignore[arg-type]
    blob = b"layout-1 state after 2 labels"
    client.hset("acog:{a}:2:ckpt:0123456789abcdef", "0", blob)
    client.lpush("acog:{a}:2:ckpt_index", f"{ids[1]} 0123456789abcdef 1 {len(blob)}")
    client.set(f"acog:{{a}}:2:done:{parse_prediction_id(pids[2]).token}", ids[2], px=int(DONE_TTL * 1000))
    return Layout1(pids, ids, blob)


async def test_a_layout_1_store_reads_as_it_was(store: RedisModelStore, redis_client: redis.Redis) -> None:
    written = write_layout_1(redis_client)
    ids = written.ids
    assert await store.identity(create=False) is None
    assert await store.legacy_models() == [(A, 3), (B, 1)]
    assert await store.load_models() == []  # not adopted yet
    log = await store.read_log("a", 2, "0-0", 10)
    assert [(e.stream_id, e.seq, e.prediction_id, e.y, e.yhat) for e in log] == [
        (sid, None, pid, 1, -1) for sid, pid in zip(ids, written.pids, strict=True)
    ]
    assert log[0].example == example(0)
    assert await store.checkpoint_index("a", 2) == [Manifest(ids[1], None, None)]
    assert await store.load_checkpoints("a", 2) == [(ids[1], None, written.blob)]
    # nothing can be appended before the model is adopted (it has no layout-2 record)
    with pytest.raises(GenerationGone):
        await store.append_examples("a", 2, [(example(9), 1)], time.time())


async def test_adopting_models_then_retiring_layout_1(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    written = write_layout_1(redis_client)
    ids, pids = written.ids, written.pids
    assert await store.adopt_model(A, 3, 3)  # its log holds 3 entries
    assert await store.load_model("a") == A
    assert await store.last_generation("a") == 3
    assert await log_sequence(store, "a", 2) == 3
    assert not await store.adopt_model(A, 3, 3)  # done already (another replica, say)
    assert await store.adopt_model(B, 1, 0)
    assert await store.load_models() == [A, B]
    assert await store.last_generation("b") == 1

    # labels go on where the log was: numbered from 4
    p = pending("a", 2)
    await store.put_pending("a", 2, [p], ttl_seconds=WINDOW)
    (outcome,) = await label(store, [(p.prediction_id, 1)], model="a", generation=2)
    assert (outcome.status, outcome.seq) == ("appended", 4)
    assert [e.seq for e in await store.read_log("a", 2, "0-0", 10)] == [None, None, None, 4]
    # a layout-1 done marker holds the stream id alone: a retry answers duplicate with it, whatever
    # the value (the first value is not recorded, so no conflict can be told), and appends nothing
    retried = await label(store, [(pids[2], 1), (pids[2], -1)], model="a", generation=2)
    assert [(o.status, o.stream_id, o.seq, o.first_y) for o in retried] == [
        ("duplicate", ids[2], None, None)
    ] * 2
    assert await log_sequence(store, "a", 2) == 4

    # checkpoints: one at a layout-1 entry (which carries no number to check) and one at entry 4
    assert await store.lease("a", 2, HOLDER, 60) == HOLDER
    assert await store.write_checkpoint("a", 2, b"at 3", ids[2], 3, 10.0, 3, HOLDER)
    assert outcome.stream_id is not None
    assert await store.write_checkpoint("a", 2, b"at 4", outcome.stream_id, 4, 11.0, 3, HOLDER)
    assert await store.checkpoint_index("a", 2) == [
        Manifest(outcome.stream_id, 4, 11.0),
        Manifest(ids[2], 3, 10.0),
        Manifest(ids[1], None, None),  # the layout-1 one, still retained and trimmed below
    ]
    assert [e.stream_id for e in await store.read_log("a", 2, "0-0", 10)] == [
        ids[1],
        ids[2],
        outcome.stream_id,
    ]

    await store.finish_layout_migration()
    assert await store.legacy_models() == []
    assert not redis_client.exists("acog:models", "acog:generations")
    assert redis_client.hget("{acog:models}:layout1", "a") == record_json(A).encode()  # kept for an operator
    assert redis_client.hget("{acog:generations}:layout1", "a") == b"3"
    await store.finish_layout_migration()  # nothing left: a no-op
    assert await store.load_models() == [A, B]
    # generations go on from the last one layout 1 issued
    assert (await store.put_model("a", {}, 0.0, 2)).generation == 4


async def test_a_fresh_store_has_nothing_to_migrate(store: RedisModelStore) -> None:
    assert await store.legacy_models() == []
    await store.finish_layout_migration()
    assert await store.identity(create=False) is None


async def test_an_adopted_model_is_migrated_even_once_deleted(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    """Two replicas migrate at once; one finishes, serves, and the model is deleted; the slower one
    then adopts the same layout-1 record: that must not bring the deleted model back, and a model
    adopted already is no longer listed as left to migrate."""
    write_layout_1(redis_client)
    assert await store.adopt_model(A, 3, 3)
    assert await store.legacy_models() == [(B, 1)]
    assert await store.delete_model("a") == 2
    assert await store.legacy_models() == [(B, 1)]
    assert not await store.adopt_model(A, 3, 3)
    assert await store.load_model("a") is None and await store.load_models() == []
    # replaced since: the newer generation stays
    assert await store.adopt_model(B, 1, 0)
    replaced = await store.put_model("b", {"algorithm": "acog"}, 2.0, 1)
    assert not await store.adopt_model(B, 1, 0)
    assert await store.load_models() == [replaced]


async def test_generations_of_models_left_behind_never_repeat(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    """A layout-1 model that was not adopted (its configuration no longer loads, say), and one
    deleted under layout 1 (its name only in the generations hash): once layout 1 is retired, a
    model created under either name gets a generation layout 1 never issued, so it never appends
    to a leftover layout-1 log or answers for an old generation's prediction ids."""
    write_layout_1(redis_client)
    redis_client.hset("acog:generations", "c", 5)
    assert await store.adopt_model(A, 3, 3)  # b is left behind
    await store.finish_layout_migration()
    assert (await store.last_generation("b"), await store.last_generation("c")) == (1, 5)
    assert (await store.put_model("b", {}, 0.0, 0)).generation == 2
    assert (await store.put_model("c", {}, 0.0, 0)).generation == 6
    assert await store.last_generation("a") == 3


async def test_the_migration_on_a_redis_cluster(redis_cluster: RedisClusterProcesses) -> None:
    """The layout-1 hashes have no hash tag (they sit on their own shards): reading, adopting and
    retiring them works on a cluster too."""
    flush_cluster(redis_cluster)
    store = RedisModelStore.from_url(redis_cluster.url)
    try:
        with redis_cluster.client() as client:
            write_layout_1(client)  # type: ignore[arg-type]
            assert await store.legacy_models() == [(A, 3), (B, 1)]
            assert await store.adopt_model(A, 3, 3) and await store.adopt_model(B, 1, 0)
            await store.finish_layout_migration()
            assert await store.legacy_models() == []
            assert not client.exists("acog:models") and not client.exists("acog:generations")
        assert await store.load_models() == [A, B]
        assert [e.seq for e in await store.read_log("a", 2, "0-0", 10)] == [None, None, None]
    finally:
        await store.close()
        flush_cluster(redis_cluster)
