"""The label log: numbered self-contained events, label outcomes (first outcome on a retry, conflicts),
refusal of a generation that is no longer current, append_examples and append_event."""

from __future__ import annotations

import time

import pytest
import redis

from model_store import (
    GenerationGone,
    LogEntry,
    LogMoved,
    MemoryModelStore,
    RedisModelStore,
    make_prediction_id,
    parse_prediction_id,
    parse_stream_id,
)

from ..support.private_redis import PrivateRedis
from .conftest import Backend
from .factories import (
    DONE_TTL,
    WINDOW,
    append,
    example,
    get_pending,
    label,
    log_sequence,
    new_model,
    pending,
    snapshot,
)

pytestmark = pytest.mark.anyio


async def test_labels_append_numbered_self_contained_events(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    await new_model(store)
    items = [pending("m", 1, seed) for seed in range(3)]
    await store.put_pending("m", 1, items, ttl_seconds=WINDOW)
    labelled_at = time.time()
    ys = (1, -1, 1)
    outcomes = await store.label(
        "m",
        1,
        [(parse_prediction_id(p.prediction_id), y) for p, y in zip(items, ys, strict=True)],
        labelled_at,
        DONE_TTL,
        WINDOW,
    )
    assert [(o.status, o.seq, o.first_y) for o in outcomes] == [
        ("appended", n, y) for n, y in zip((1, 2, 3), ys, strict=True)
    ]
    assert [(o.predicted_at, o.labelled_at) for o in outcomes] == [
        (p.predicted_at, labelled_at) for p in items
    ]
    stream_ids = [o.stream_id for o in outcomes]
    assert sorted(stream_ids, key=parse_stream_id) == stream_ids  # type: ignore[arg-type]
    expected = [
        LogEntry(sid, n, p.prediction_id, p.example, y, p.yhat, p.predicted_at, labelled_at)  # type: ignore[arg-type]
        for sid, n, p, y in zip(stream_ids, (1, 2, 3), items, ys, strict=True)
    ]
    assert await store.read_log("m", 1, "0-0", 100) == expected
    assert await log_sequence(store, "m", 1) == 3
    # labelled predictions are no longer pending, and never count as expired
    assert await store.count_pending("m", 1, time.time()) == 0
    assert await store.sweep_expired("m", 1, time.time() + 10 * WINDOW) == 0
    for p in items:
        assert await get_pending(store, p.prediction_id) is None
    # events are self-contained: with every other key gone, the log still replays
    for key in redis_client.keys("*"):
        if key != b"acog:{m}:1:log":
            redis_client.delete(key)
    assert await store.read_log("m", 1, "0-0", 100) == expected


async def test_sequence_numbers_are_consecutive_per_generation(store: RedisModelStore) -> None:
    """Labels, examples and events share one counter; what appends nothing takes no number."""
    await new_model(store)
    items = [pending("m", 1, seed) for seed in range(3)]
    await store.put_pending("m", 1, items, ttl_seconds=WINDOW)
    first = await label(store, [(items[0].prediction_id, 1), (items[1].prediction_id, -1)])
    examples = await append(store, 2)
    event, _ = await store.append_event("m", 1, "migration", b"body", "request-1", time.time())
    # a retry, a conflict, an unknown id and an expired one take no number
    await label(
        store,
        [
            (items[0].prediction_id, 1),
            (items[1].prediction_id, 1),
            (make_prediction_id("m", 1, time.time()), 1),
            (make_prediction_id("m", 1, time.time() - 2 * WINDOW), 1),
        ],
    )
    await store.append_event("m", 1, "migration", b"body", "request-1", time.time())
    last = await label(store, [(items[2].prediction_id, 1)])
    numbers = [o.seq for o in first] + [e.seq for e in examples] + [event.seq, last[0].seq]
    assert numbers == [1, 2, 3, 4, 5, 6]
    assert [e.seq for e in await store.read_log("m", 1, "0-0", 100)] == numbers
    assert await log_sequence(store, "m", 1) == 6
    # a new generation counts from 1 again, the old one keeps its count
    assert await new_model(store) == 2
    assert [e.seq for e in await append(store, 2, generation=2)] == [1, 2]
    assert (await log_sequence(store, "m", 1), await log_sequence(store, "m", 2)) == (6, 2)


async def test_a_retried_label_answers_the_first_outcome(store: RedisModelStore) -> None:
    await new_model(store)
    p = pending("m", 1)
    await store.put_pending("m", 1, [p], ttl_seconds=WINDOW)
    first_at = time.time()
    (first,) = await store.label(
        "m", 1, [(parse_prediction_id(p.prediction_id), -1)], first_at, DONE_TTL, WINDOW
    )
    assert first.status == "appended"
    (retry,) = await store.label(
        "m", 1, [(parse_prediction_id(p.prediction_id), -1)], first_at + 5, DONE_TTL, WINDOW
    )
    assert retry.status == "duplicate"
    assert (retry.stream_id, retry.seq, retry.predicted_at, retry.labelled_at, retry.first_y) == (
        first.stream_id,
        1,
        p.predicted_at,
        first_at,  # the first label's time, not the retry's
        -1,
    )
    assert len(await store.read_log("m", 1, "0-0", 10)) == 1


async def test_another_value_is_a_conflict_that_writes_nothing(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    await new_model(store)
    p, q = pending("m", 1, 0), pending("m", 1, 1)
    await store.put_pending("m", 1, [p, q], ttl_seconds=WINDOW)
    labelled_at = time.time()
    (first,) = await store.label(
        "m", 1, [(parse_prediction_id(p.prediction_id), 1)], labelled_at, DONE_TTL, WINDOW
    )
    before = snapshot(redis_client)
    (conflict,) = await label(store, [(p.prediction_id, -1)])
    assert conflict.status == "conflict" and conflict.first_y == 1
    assert (conflict.stream_id, conflict.seq, conflict.labelled_at) == (first.stream_id, 1, labelled_at)
    assert snapshot(redis_client) == before
    # within one batch the first label of an id decides, the second is a duplicate or a conflict
    outcomes = await label(store, [(q.prediction_id, -1), (q.prediction_id, 1), (q.prediction_id, -1)])
    assert [(o.status, o.seq, o.first_y) for o in outcomes] == [
        ("appended", 2, -1),
        ("conflict", 2, -1),
        ("duplicate", 2, -1),
    ]
    assert [e.y for e in await store.read_log("m", 1, "0-0", 10)] == [1, -1]


async def test_done_markers_last_done_ttl(store: RedisModelStore, redis_client: redis.Redis) -> None:
    await new_model(store)
    p = pending("m", 1)
    await store.put_pending("m", 1, [p], ttl_seconds=WINDOW)
    await label(store, [(p.prediction_id, 1)])
    ttl_ms = redis_client.pttl(f"acog:{{m}}:1:done:{p.prediction_id[-16:]}")
    assert DONE_TTL * 1000 - 5000 < ttl_ms <= DONE_TTL * 1000


async def test_expired_and_unknown_ids(store: RedisModelStore, redis_client: redis.Redis) -> None:
    await new_model(store)
    now = time.time()
    stale = pending("m", 1, at=now - 2 * WINDOW)
    await store.put_pending("m", 1, [stale], ttl_seconds=WINDOW)  # dead on arrival
    never_put_recent = make_prediction_id("m", 1, now)
    never_put_old = make_prediction_id("m", 1, now - 2 * WINDOW)
    other_model = make_prediction_id("n", 1, now)
    other_generation = make_prediction_id("m", 2, now)
    ids = [stale.prediction_id, never_put_recent, never_put_old, other_model, other_generation]
    before = snapshot(redis_client)
    outcomes = await label(store, [(pid, 1) for pid in ids])
    assert [(o.prediction_id, o.status) for o in outcomes] == list(
        zip(ids, ["expired", "unknown", "expired", "unknown", "unknown"], strict=True)
    )
    assert all(o.stream_id is None and o.seq is None and o.predicted_at is None for o in outcomes)
    assert snapshot(redis_client) == before
    assert await log_sequence(store, "m", 1) == 0


async def test_expiry_is_exact_around_a_short_window(store: RedisModelStore) -> None:
    await new_model(store)
    now = time.time()
    p = pending("m", 1, at=now)
    await store.put_pending("m", 1, [p], ttl_seconds=1.0)
    outcomes = await store.label(
        "m", 1, [(parse_prediction_id(p.prediction_id), 1)], time.time(), DONE_TTL, 1.0
    )
    assert outcomes[0].status == "appended"
    q = pending("m", 1, seed=1, at=now)
    await store.put_pending("m", 1, [q], ttl_seconds=1.0)
    time.sleep(max(0.0, now + 1.05 - time.time()))
    outcomes = await store.label(
        "m", 1, [(parse_prediction_id(q.prediction_id), 1)], time.time(), DONE_TTL, 1.0
    )
    assert outcomes[0].status == "expired"


async def test_appends_to_a_generation_no_longer_current_are_refused(
    any_store: RedisModelStore, backend: Backend
) -> None:
    """After a replace and after a delete, label, append_examples and append_event raise
    GenerationGone (with the current generation) and write nothing."""
    store = any_store
    with pytest.raises(GenerationGone) as never:
        await store.append_examples("m", 1, [(example(0), 1)], time.time())
    assert never.value.current is None  # no model at all
    await new_model(store)
    p = pending("m", 1)
    await store.put_pending("m", 1, [p], ttl_seconds=WINDOW)
    await append(store, 1)

    async def refused(current: int | None) -> None:
        before = backend.snapshot()
        calls = [
            label(store, [(p.prediction_id, 1)]),
            store.append_examples("m", 1, [(example(1), 1)], time.time()),
            store.append_event("m", 1, "migration", b"x", "request", time.time()),
        ]
        for call in calls:
            with pytest.raises(GenerationGone) as info:
                await call
            assert (info.value.model, info.value.generation, info.value.current) == ("m", 1, current)
        assert backend.snapshot() == before

    assert await new_model(store) == 2  # replaced
    await refused(2)
    assert [e.seq for e in await store.read_log("m", 1, "0-0", 10)] == [1]
    assert await get_pending(store, p.prediction_id) == p  # still unlabelled
    await store.delete_model("m")
    await refused(None)
    with pytest.raises(GenerationGone):  # the current generation is gone too
        await store.append_examples("m", 2, [(example(0), 1)], time.time())


async def test_bad_labels_are_refused_before_anything_is_written(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    await new_model(store)
    p = pending("m", 1)
    await store.put_pending("m", 1, [p], ttl_seconds=WINDOW)
    before = snapshot(redis_client)
    for y in (0, 2, True):
        with pytest.raises(ValueError):
            await label(store, [(p.prediction_id, 1), (p.prediction_id, y)])
        with pytest.raises(ValueError):
            await store.append_examples("m", 1, [(example(0), 1), (example(1), y)], time.time())
    for kind in ("", "label", "not an identifier"):
        with pytest.raises(ValueError):
            await store.append_event("m", 1, kind, b"", "request", time.time())
    assert snapshot(redis_client) == before
    assert await get_pending(store, p.prediction_id) == p


async def test_append_examples(store: RedisModelStore) -> None:
    await new_model(store)
    labelled_at = time.time()
    xs = [example(seed) for seed in range(3)]
    ids, entries = await store.append_examples(
        "m", 1, [(x, y) for x, y in zip(xs, (1, -1, -1), strict=True)], labelled_at
    )
    assert len(set(ids)) == 3 and all(pid.startswith("m:1:") for pid in ids)
    assert [e.seq for e in entries] == [1, 2, 3]
    log = await store.read_log("m", 1, "0-0", 10)
    assert [(e.stream_id, e.seq) for e in log] == entries
    assert [(e.prediction_id, e.example, e.y, e.yhat) for e in log] == [
        (pid, x, y, 0) for pid, x, y in zip(ids, xs, (1, -1, -1), strict=True)
    ]
    assert all(e.predicted_at == e.labelled_at == labelled_at for e in log)
    # the server-made ids are already labelled: the same value is a duplicate, another a conflict
    outcomes = await label(store, [(ids[0], 1), (ids[1], 1)])
    assert [(o.status, o.stream_id, o.seq) for o in outcomes] == [
        ("duplicate", entries[0].stream_id, 1),
        ("conflict", entries[1].stream_id, 2),
    ]


async def test_append_event_is_idempotent_by_request_id(store: RedisModelStore) -> None:
    await new_model(store)
    body = bytes(range(256))
    at = time.time()
    first, new = await store.append_event("m", 1, "feature_migration", body, "request-1", at)
    assert new and first.seq == 1
    again, new = await store.append_event("m", 1, "feature_migration", b"other", "request-1", at + 1)
    assert not new and again == first
    other, new = await store.append_event("m", 1, "feature_migration", b"", "request-2", at)
    assert new and other.seq == 2
    (entry, _) = await store.read_log("m", 1, "0-0", 10)
    assert (entry.stream_id, entry.seq, entry.kind, entry.body, entry.labelled_at) == (
        first.stream_id,
        1,
        "feature_migration",
        body,
        at,
    )
    assert entry.example is None and entry.prediction_id == "" and entry.y == 0


async def test_read_log_pages(store: RedisModelStore) -> None:
    await new_model(store)
    assert await store.read_log("m", 1, "0-0", 10) == []
    await append(store, 7)
    everything = await store.read_log("m", 1, "0-0", 100)
    assert [e.seq for e in everything] == list(range(1, 8))
    pages, after = [], "0-0"
    while page := await store.read_log("m", 1, after, 3):
        pages.append(page)
        after = page[-1].stream_id
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [e for page in pages for e in page] == everything
    with pytest.raises(ValueError):
        await store.read_log("m", 1, "latest", 10)


async def test_label_batches_are_one_round_trip(private_redis: PrivateRedis) -> None:
    """One script call per batch and no key scans (on a server of our own, so the counts are ours)."""
    store = RedisModelStore.from_url(private_redis.url)
    stats = redis.Redis(port=private_redis.port)
    try:
        await new_model(store)
        items = [pending("m", 1, seed) for seed in range(50)]
        await store.put_pending("m", 1, items, ttl_seconds=WINDOW)
        await label(store, [])  # the first call on a new server also loads the script (NOSCRIPT)
        stats.config_resetstat()
        await label(store, [(p.prediction_id, 1) for p in items])
        calls = {name: value["calls"] for name, value in stats.info("commandstats").items()}
    finally:
        await store.close()
        stats.close()
    assert calls.pop("cmdstat_evalsha") == 1
    assert calls.pop("cmdstat_xadd") == 50 and calls.pop("cmdstat_incr") == 50  # run inside the script
    assert set(calls) <= {
        "cmdstat_time",
        "cmdstat_hget",
        "cmdstat_get",
        "cmdstat_hmget",
        "cmdstat_set",
        "cmdstat_del",
        "cmdstat_zrem",
        "cmdstat_config|resetstat",
    }


async def test_a_retried_append_appends_nothing_twice(
    store: RedisModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """redis-py retries a call whose answer was lost; the same server-made ids must not append twice."""
    await new_model(store)
    now = time.time()  # one clock reading: a retry makes the same ids, even across a millisecond tick
    fixed = iter([make_prediction_id("m", 1, now, token=f"{i:016x}") for i in (1, 2, 1, 2)])
    monkeypatch.setattr("model_store.redis_log.make_prediction_id", lambda *args: next(fixed))
    items = [(example(0), 1), (example(1), -1)]
    first = await store.append_examples("m", 1, items, time.time())
    again = await store.append_examples("m", 1, items, time.time())
    assert again == first and [e.seq for e in first.entries] == [1, 2]
    assert len(await store.read_log("m", 1, "0-0", 10)) == 2


async def test_a_compare_and_append_lands_only_right_after_the_expected_entry(store: RedisModelStore) -> None:
    """``expected_seq``: appended as the entry after it, else ``LogMoved`` and nothing written; a retry
    of one that landed answers it. The Redis store and the in-memory one answer alike."""
    for each in (store, MemoryModelStore()):
        await new_model(each)
        at = time.time()
        await each.append_event("m", 1, "migration", b"a", "request-1", at)
        with pytest.raises(LogMoved) as moved:
            await each.append_event("m", 1, "migration", b"b", "request-2", at, expected_seq=0)
        assert (moved.value.expected, moved.value.seq) == (0, 1)
        landed, new = await each.append_event("m", 1, "migration", b"c", "request-3", at, expected_seq=1)
        assert new and landed.seq == 2
        again, new = await each.append_event("m", 1, "migration", b"c", "request-3", at, expected_seq=1)
        assert not new and again == landed  # a retry finds its entry, though the log is at 2 now
        assert [e.body for e in await each.read_log("m", 1, "0-0", 10)] == [b"a", b"c"]
