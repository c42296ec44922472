"""Checkpoints: keep the newest K, and trim the log only below what every retained one covers."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model_store import RedisModelStore, StoreError, parse_stream_id

from .factories import example

pytestmark = pytest.mark.anyio


async def append(store: RedisModelStore, n: int) -> list[str]:
    _, backlog = await store.append_examples("m", 1, [(example(i), 1) for i in range(n)], time.time(), "0-0")
    return [entry.stream_id for entry in backlog[-n:]]


async def test_keeps_the_newest_k_and_trims_below_the_oldest(store: RedisModelStore) -> None:
    ids = await append(store, 10)
    for i, applied in enumerate(ids[:6]):
        assert await store.write_checkpoint("m", 1, f"state {i}".encode(), applied, keep=3)
    assert await store.load_checkpoints("m", 1) == [
        (ids[5], b"state 5"),
        (ids[4], b"state 4"),
        (ids[3], b"state 3"),
    ]
    # the entry at the oldest retained id stays, everything after it too
    assert [e.stream_id for e in await store.read_log("m", 1, "0-0", 100)] == ids[3:]
    assert (await store.log_info("m", 1)).first_id == ids[3]


async def test_stale_or_repeated_checkpoints_change_nothing(store: RedisModelStore) -> None:
    ids = await append(store, 5)
    assert await store.write_checkpoint("m", 1, b"at 3", ids[3], keep=2)
    assert not await store.write_checkpoint("m", 1, b"retry", ids[3], keep=2)
    assert not await store.write_checkpoint("m", 1, b"laggard", ids[1], keep=2)
    assert await store.load_checkpoints("m", 1) == [(ids[3], b"at 3")]


async def test_checkpoint_of_an_empty_log(store: RedisModelStore) -> None:
    assert await store.write_checkpoint("m", 1, b"fresh", "0-0", keep=2)
    ids = await append(store, 2)
    assert await store.write_checkpoint("m", 1, b"two", ids[1], keep=2)
    assert await store.load_checkpoints("m", 1) == [(ids[1], b"two"), ("0-0", b"fresh")]
    assert len(await store.read_log("m", 1, "0-0", 10)) == 2  # "0-0" covers nothing: no trim


async def test_checkpoint_past_the_log_end_is_refused(store: RedisModelStore) -> None:
    with pytest.raises(StoreError):
        await store.write_checkpoint("m", 1, b"x", "1-0", keep=2)
    ids = await append(store, 1)
    ms, seq = parse_stream_id(ids[0])
    with pytest.raises(StoreError):
        await store.write_checkpoint("m", 1, b"x", f"{ms}-{seq + 1}", keep=2)
    with pytest.raises(ValueError):
        await store.write_checkpoint("m", 1, b"x", ids[0], keep=0)
    assert await store.load_checkpoints("m", 1) == []


async def test_large_binary_blobs_round_trip(store: RedisModelStore) -> None:
    ids = await append(store, 1)
    blob = bytes(range(256)) * 40_000  # ~10 MB, every byte value
    assert await store.write_checkpoint("m", 1, blob, ids[0], keep=2)
    assert await store.load_checkpoints("m", 1) == [(ids[0], blob)]


operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 4)),
        st.tuples(st.just("checkpoint"), st.floats(0, 1)),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations, keep=st.integers(1, 4))
def test_trimming_never_drops_an_event_a_retained_checkpoint_needs(
    redis_client: redis.Redis, redis_url: str, ops: list[tuple[str, float]], keep: int
) -> None:
    """Random interleavings of appends and checkpoints (at any applied id, stale ones included)."""
    redis_client.flushdb()

    async def scenario() -> None:
        store = RedisModelStore.from_url(redis_url)
        appended: list[str] = []
        retained: list[str] = []  # the model: applied ids, newest first
        try:
            for op, arg in ops:
                if op == "append":
                    appended += await append(store, int(arg))
                    continue
                applied = (["0-0", *appended])[int(arg * len(appended))]
                written = await store.write_checkpoint("m", 1, applied.encode(), applied, keep)
                newer = bool(retained) and parse_stream_id(retained[0]) >= parse_stream_id(applied)
                assert written == (not newer)
                if written:
                    retained = [applied, *retained][:keep]
                stored = await store.load_checkpoints("m", 1)
                assert [(c.applied_id, c.blob) for c in stored] == [(a, a.encode()) for a in retained]
                for applied_id in retained:  # every retained checkpoint can still be replayed
                    after = [a for a in appended if parse_stream_id(a) > parse_stream_id(applied_id)]
                    assert [e.stream_id for e in await store.read_log("m", 1, applied_id, 1000)] == after
            if retained and retained[-1] != "0-0":  # and the log holds nothing older than needed
                floor = parse_stream_id(retained[-1])
                expected_first = next(a for a in appended if parse_stream_id(a) >= floor)
                assert (await store.log_info("m", 1)).first_id == expected_first
        finally:
            await store.close()

    asyncio.run(scenario())
