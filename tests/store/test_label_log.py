"""The label log: label outcomes, idempotency, backlogs, self-contained events, append_examples."""

from __future__ import annotations

import time

import pytest
import redis

from model_store import LogEntry, RedisModelStore, make_prediction_id, parse_stream_id

from ..support.private_redis import PrivateRedis
from .factories import example, pending

pytestmark = pytest.mark.anyio

WINDOW = 60.0
DONE_TTL = 120.0


async def label(store: RedisModelStore, items: list[tuple[str, int]], after: str = "0-0") -> tuple:
    return await store.label("m", 1, items, time.time(), after, DONE_TTL, WINDOW)


async def test_labels_append_self_contained_events(store: RedisModelStore, redis_client: redis.Redis) -> None:
    items = [pending("m", 1, seed) for seed in range(3)]
    await store.put_pending("m", 1, items, ttl_seconds=WINDOW)
    labelled_at = time.time()
    outcomes, backlog = await store.label(
        "m",
        1,
        [(p.prediction_id, y) for p, y in zip(items, (1, -1, 1), strict=True)],
        labelled_at,
        "0-0",
        DONE_TTL,
        WINDOW,
    )
    assert [o.status for o in outcomes] == ["appended"] * 3
    assert [o.predicted_at for o in outcomes] == [p.predicted_at for p in items]
    stream_ids = [o.stream_id for o in outcomes]
    assert sorted(stream_ids, key=parse_stream_id) == stream_ids  # type: ignore[arg-type]
    expected = [
        LogEntry(sid, p.prediction_id, p.example, y, p.yhat, p.predicted_at, labelled_at)  # type: ignore[arg-type]
        for sid, p, y in zip(stream_ids, items, (1, -1, 1), strict=True)
    ]
    assert backlog == expected
    # labelled predictions are no longer pending, and never count as expired
    assert await store.count_pending("m", 1, time.time()) == 0
    assert await store.sweep_expired("m", 1, time.time() + 10 * WINDOW) == 0
    for p in items:
        assert await store.get_pending(p.prediction_id) is None
    # events are self-contained: with every other key gone, the log still replays
    for key in redis_client.keys("*"):
        if key != b"acog:{m}:1:log":
            redis_client.delete(key)
    assert await store.read_log("m", 1, "0-0", 100) == expected


async def test_duplicates_count_once_even_within_one_batch(store: RedisModelStore) -> None:
    p = pending("m", 1)
    await store.put_pending("m", 1, [p], ttl_seconds=WINDOW)
    outcomes, backlog = await label(store, [(p.prediction_id, 1), (p.prediction_id, -1)])
    assert [o.status for o in outcomes] == ["appended", "duplicate"]
    assert outcomes[1].stream_id == outcomes[0].stream_id
    assert outcomes[1].predicted_at is None
    assert [e.y for e in backlog] == [1]
    outcomes, backlog = await label(store, [(p.prediction_id, -1)], after=outcomes[0].stream_id)
    assert outcomes[0].status == "duplicate" and backlog == []
    assert (await store.log_info("m", 1)).length == 1


async def test_done_markers_last_done_ttl(store: RedisModelStore, redis_client: redis.Redis) -> None:
    p = pending("m", 1)
    await store.put_pending("m", 1, [p], ttl_seconds=WINDOW)
    await label(store, [(p.prediction_id, 1)])
    ttl_ms = redis_client.pttl(f"acog:{{m}}:1:done:{p.prediction_id[-16:]}")
    assert DONE_TTL * 1000 - 5000 < ttl_ms <= DONE_TTL * 1000


async def test_expired_and_unknown_ids(store: RedisModelStore) -> None:
    now = time.time()
    stale = pending("m", 1, at=now - 2 * WINDOW)
    await store.put_pending("m", 1, [stale], ttl_seconds=WINDOW)  # dead on arrival
    never_put_recent = make_prediction_id("m", 1, now)
    never_put_old = make_prediction_id("m", 1, now - 2 * WINDOW)
    other_model = make_prediction_id("n", 1, now)
    other_generation = make_prediction_id("m", 2, now)
    ids = [stale.prediction_id, never_put_recent, never_put_old, other_model, other_generation, "garbage"]
    outcomes, backlog = await label(store, [(pid, 1) for pid in ids])
    assert [(o.prediction_id, o.status) for o in outcomes] == list(
        zip(ids, ["expired", "unknown", "expired", "unknown", "unknown", "unknown"], strict=True)
    )
    assert all(o.stream_id is None and o.predicted_at is None for o in outcomes)
    assert backlog == []
    assert (await store.log_info("m", 1)).length == 0


async def test_expiry_is_exact_around_a_short_window(store: RedisModelStore) -> None:
    now = time.time()
    p = pending("m", 1, at=now)
    await store.put_pending("m", 1, [p], ttl_seconds=1.0)
    outcomes, _ = await store.label("m", 1, [(p.prediction_id, 1)], time.time(), "0-0", DONE_TTL, 1.0)
    assert outcomes[0].status == "appended"
    q = pending("m", 1, seed=1, at=now)
    await store.put_pending("m", 1, [q], ttl_seconds=1.0)
    time.sleep(max(0.0, now + 1.05 - time.time()))
    outcomes, _ = await store.label("m", 1, [(q.prediction_id, 1)], time.time(), "0-0", DONE_TTL, 1.0)
    assert outcomes[0].status == "expired"


async def test_backlog_covers_other_writers_in_stream_order(store: RedisModelStore, redis_url: str) -> None:
    other = RedisModelStore.from_url(redis_url)  # another process serving the same model
    try:
        mine = [pending("m", 1, seed) for seed in range(4)]
        await store.put_pending("m", 1, mine, ttl_seconds=WINDOW)
        (first,), backlog = await label(store, [(mine[0].prediction_id, 1)])
        assert [e.stream_id for e in backlog] == [first.stream_id]
        applied = first.stream_id
        assert applied is not None
        await other.label("m", 1, [(mine[1].prediction_id, -1)], time.time(), "0-0", DONE_TTL, WINDOW)
        ids, _ = await other.append_examples("m", 1, [(example(9), 1)], time.time(), "0-0")
        outcomes, backlog = await label(
            store, [(mine[2].prediction_id, 1), (mine[3].prediction_id, -1)], applied
        )
        assert [e.prediction_id for e in backlog] == [
            mine[1].prediction_id,
            ids[0],
            mine[2].prediction_id,
            mine[3].prediction_id,
        ]
        assert [e.stream_id for e in backlog][-2:] == [o.stream_id for o in outcomes]
        assert backlog == await store.read_log("m", 1, applied, 100)
        # a batch with nothing new still returns the backlog
        _, backlog = await label(store, [], applied)
        assert len(backlog) == 4
    finally:
        await other.close()


async def test_bad_labels_are_refused_before_anything_is_written(store: RedisModelStore) -> None:
    p = pending("m", 1)
    await store.put_pending("m", 1, [p], ttl_seconds=WINDOW)
    for y in (0, 2, True):
        with pytest.raises(ValueError):
            await label(store, [(p.prediction_id, 1), (p.prediction_id, y)])
    with pytest.raises(ValueError):
        await label(store, [(p.prediction_id, 1)], after="latest")
    assert (await store.log_info("m", 1)).length == 0
    assert await store.get_pending(p.prediction_id) == p


async def test_append_examples(store: RedisModelStore) -> None:
    labelled_at = time.time()
    xs = [example(seed) for seed in range(3)]
    ids, backlog = await store.append_examples(
        "m", 1, [(x, y) for x, y in zip(xs, (1, -1, -1), strict=True)], labelled_at, "0-0"
    )
    assert len(set(ids)) == 3 and all(pid.startswith("m:1:") for pid in ids)
    assert [(e.prediction_id, e.example, e.y, e.yhat) for e in backlog] == [
        (pid, x, y, 0) for pid, x, y in zip(ids, xs, (1, -1, -1), strict=True)
    ]
    assert all(e.predicted_at == e.labelled_at == labelled_at for e in backlog)
    # the server-made ids are already labelled
    outcomes, _ = await label(store, [(ids[0], 1)])
    assert outcomes[0].status == "duplicate" and outcomes[0].stream_id == backlog[0].stream_id
    ids2, backlog2 = await store.append_examples("m", 1, [(xs[0], 1)], labelled_at, backlog[-1].stream_id)
    assert [e.prediction_id for e in backlog2] == ids2


async def test_read_log_pages_and_log_info(store: RedisModelStore) -> None:
    assert await store.log_info("m", 1) == (0, None, None)
    assert await store.read_log("m", 1, "0-0", 10) == []
    await store.append_examples("m", 1, [(example(seed), 1) for seed in range(7)], time.time(), "0-0")
    everything = await store.read_log("m", 1, "0-0", 100)
    assert len(everything) == 7
    pages, after = [], "0-0"
    while page := await store.read_log("m", 1, after, 3):
        pages.append(page)
        after = page[-1].stream_id
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [e for page in pages for e in page] == everything
    info = await store.log_info("m", 1)
    assert info == (7, everything[0].stream_id, everything[-1].stream_id)


async def test_label_batches_are_one_round_trip(private_redis: PrivateRedis) -> None:
    """One script call per batch and no key scans (on a server of our own, so the counts are ours)."""
    store = RedisModelStore.from_url(private_redis.url)
    stats = redis.Redis(port=private_redis.port)
    try:
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
    assert calls.pop("cmdstat_xadd") == 50 and calls.pop("cmdstat_xrange") == 1  # run inside the script
    assert set(calls) <= {
        "cmdstat_time",
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
    fixed = iter([make_prediction_id("m", 1, time.time(), token=f"{i:016x}") for i in (1, 2, 1, 2)])
    monkeypatch.setattr("model_store.redis_store.make_prediction_id", lambda *args: next(fixed))
    items = [(example(0), 1), (example(1), -1)]
    first, backlog = await store.append_examples("m", 1, items, time.time(), "0-0")
    again, backlog_again = await store.append_examples("m", 1, items, time.time(), "0-0")
    assert first == again and backlog_again == backlog and len(backlog) == 2
