"""Checkpoints: the writer lease that fences them, acceptance only as the exact log prefix they claim,
keeping the newest K, and trimming the log only below what every retained one covers."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model_store import Appended, RedisModelStore, StoreError, parse_stream_id

from .factories import HOLDER, append, new_model, snapshot

pytestmark = pytest.mark.anyio


async def checkpoint(
    store: RedisModelStore, blob: bytes, at: Appended | None, keep: int = 2, holder: str = HOLDER
) -> bool:
    """Write ``blob`` as the state after entry ``at`` (None: the empty log) of model m generation 1."""
    applied_id, seq = (at.stream_id, at.seq) if at is not None else ("0-0", 0)
    assert seq is not None
    return await store.write_checkpoint("m", 1, blob, applied_id, seq, time.time(), keep, holder)


@pytest.fixture
async def leased(store: RedisModelStore) -> RedisModelStore:
    """The store, with model m generation 1 created and its writer lease held by HOLDER."""
    await new_model(store)
    assert await store.lease("m", 1, HOLDER, 60) == HOLDER
    return store


async def test_the_lease_is_taken_renewed_refused_released(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    assert await store.lease("m", 1, "a", 10) == "a"
    ttl = redis_client.pttl("acog:{m}:1:writer")
    assert 5_000 < ttl <= 10_000
    assert await store.lease("m", 1, "a", 60) == "a"  # renewed, with the new TTL
    assert 15_000 < redis_client.pttl("acog:{m}:1:writer") <= 60_000
    assert await store.lease("m", 1, "b", 60) == "a"  # held: b is told who holds it
    assert await store.lease("m", 2, "b", 60) == "b"  # per generation
    await store.release_lease("m", 1, "b")  # not b's to release
    assert await store.lease("m", 1, "b", 60) == "a"
    await store.release_lease("m", 1, "a")
    assert await store.lease("m", 1, "b", 60) == "b"
    await store.release_lease("m", 1, "b")
    await store.release_lease("m", 1, "b")  # releasing a free lease is a no-op
    assert not redis_client.exists("acog:{m}:1:writer")


async def test_an_expired_lease_lets_another_replica_take_it(store: RedisModelStore) -> None:
    """The holder died (it stops renewing): once the TTL runs out another replica takes over, and
    the dead holder's checkpoint is refused."""
    await new_model(store)
    (entry,) = await append(store, 1)
    assert await store.lease("m", 1, "dead", 0.5) == "dead"
    assert await store.lease("m", 1, "b", 10) == "dead"
    await asyncio.sleep(0.6)
    assert await store.lease("m", 1, "b", 10) == "b"
    with pytest.raises(StoreError, match="lease"):
        await checkpoint(store, b"late", entry, holder="dead")
    assert await checkpoint(store, b"new writer", entry, holder="b")


async def test_a_checkpoint_without_the_lease_is_refused_and_writes_nothing(
    store: RedisModelStore, redis_client: redis.Redis
) -> None:
    await new_model(store)
    (entry,) = await append(store, 1)
    before = snapshot(redis_client)
    with pytest.raises(StoreError, match="lease is held by ''"):  # nobody holds it
        await checkpoint(store, b"x" * 100, entry)
    assert snapshot(redis_client) == before
    assert await store.lease("m", 1, "b", 60) == "b"
    before = snapshot(redis_client)
    with pytest.raises(StoreError, match="lease is held by 'b'"):
        await checkpoint(store, b"x" * 100, entry)
    assert snapshot(redis_client) == before
    assert await store.checkpoint_index("m", 1) == []


async def test_a_state_that_is_not_the_prefix_it_claims_is_refused(
    leased: RedisModelStore, redis_client: redis.Redis
) -> None:
    """The entry at ``applied_id`` must carry ``seq``: a state that claims another count of entries is
    refused, as is an ``applied_id`` that is no entry at all or past the log's end."""
    store = leased
    entries = await append(store, 3)
    before = snapshot(redis_client)
    wrong_seq = Appended(entries[1].stream_id, 3)
    with pytest.raises(StoreError, match="entry 2"):
        await checkpoint(store, b"state", wrong_seq)
    first_ms, _ = parse_stream_id(entries[0].stream_id)
    with pytest.raises(StoreError, match="missing"):  # inside the log, but no entry of it
        await checkpoint(store, b"state", Appended(f"{first_ms - 1}-7", 1))
    last_ms, last_n = parse_stream_id(entries[2].stream_id)
    with pytest.raises(StoreError, match="log ends"):
        await checkpoint(store, b"state", Appended(f"{last_ms}-{last_n + 1}", 4))
    assert snapshot(redis_client) == before
    with pytest.raises(ValueError):
        await checkpoint(store, b"state", entries[0], keep=0)
    assert await checkpoint(store, b"state", entries[1])  # the right one is accepted


async def test_keeps_the_newest_k_and_trims_below_the_oldest(leased: RedisModelStore) -> None:
    store = leased
    entries = await append(store, 10)
    for i, at in enumerate(entries[:6]):
        assert await store.write_checkpoint(
            "m", 1, f"state {i}".encode(), at.stream_id, i + 1, 1000.0 + i, 3, HOLDER
        )
    assert await store.load_checkpoints("m", 1) == [
        (entries[5].stream_id, 6, b"state 5"),
        (entries[4].stream_id, 5, b"state 4"),
        (entries[3].stream_id, 4, b"state 3"),
    ]
    assert await store.checkpoint_index("m", 1) == [
        (entries[5].stream_id, 6, 1005.0),
        (entries[4].stream_id, 5, 1004.0),
        (entries[3].stream_id, 4, 1003.0),
    ]
    # the entry at the oldest retained id stays, everything after it too
    assert [(e.stream_id, e.seq) for e in await store.read_log("m", 1, "0-0", 100)] == entries[3:]


async def test_stale_or_repeated_checkpoints_change_nothing(
    leased: RedisModelStore, redis_client: redis.Redis
) -> None:
    store = leased
    entries = await append(store, 5)
    assert await checkpoint(store, b"at 4", entries[3])
    before = snapshot(redis_client)
    assert not await checkpoint(store, b"retry", entries[3])
    assert not await checkpoint(store, b"laggard", entries[1])
    assert not await checkpoint(store, b"laggard", entries[1], holder="not the holder")
    assert snapshot(redis_client) == before
    assert await store.load_checkpoints("m", 1) == [(entries[3].stream_id, 4, b"at 4")]


async def test_checkpoint_of_an_empty_log(leased: RedisModelStore) -> None:
    store = leased
    assert await checkpoint(store, b"fresh", None)
    entries = await append(store, 2)
    assert await checkpoint(store, b"two", entries[1])
    assert await store.load_checkpoints("m", 1) == [(entries[1].stream_id, 2, b"two"), ("0-0", 0, b"fresh")]
    assert len(await store.read_log("m", 1, "0-0", 10)) == 2  # "0-0" covers nothing: no trim


async def test_large_binary_blobs_round_trip(leased: RedisModelStore) -> None:
    store = leased
    (entry,) = await append(store, 1)
    blob = bytes(range(256)) * 40_000  # ~10 MB, every byte value
    assert await checkpoint(store, blob, entry)
    assert await store.load_checkpoints("m", 1) == [(entry.stream_id, 1, blob)]


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
    """Random interleavings of appends and checkpoints (at any entry, stale ones included)."""
    redis_client.flushdb()

    async def scenario() -> None:
        store = RedisModelStore.from_url(redis_url)
        appended: list[Appended] = []
        retained: list[Appended] = []  # the model: checkpoint positions, newest first
        try:
            await new_model(store)
            assert await store.lease("m", 1, HOLDER, 60) == HOLDER
            for op, arg in ops:
                if op == "append":
                    appended += await append(store, int(arg))
                    continue
                at = ([Appended("0-0", 0), *appended])[int(arg * len(appended))]
                written = await store.write_checkpoint(
                    "m", 1, at.stream_id.encode(), at.stream_id, at.seq or 0, 0.0, keep, HOLDER
                )
                newer = bool(retained) and parse_stream_id(retained[0].stream_id) >= parse_stream_id(
                    at.stream_id
                )
                assert written == (not newer)
                if written:
                    retained = [at, *retained][:keep]
                stored = await store.load_checkpoints("m", 1)
                assert stored == [(a.stream_id, a.seq, a.stream_id.encode()) for a in retained]
                for position in retained:  # every retained checkpoint can still be replayed
                    after = [
                        a
                        for a in appended
                        if parse_stream_id(a.stream_id) > parse_stream_id(position.stream_id)
                    ]
                    assert [
                        (e.stream_id, e.seq) for e in await store.read_log("m", 1, position.stream_id, 1000)
                    ] == after
            if retained and retained[-1].stream_id != "0-0":  # and the log holds nothing older than needed
                floor = parse_stream_id(retained[-1].stream_id)
                kept = [a for a in appended if parse_stream_id(a.stream_id) >= floor]
                assert [(e.stream_id, e.seq) for e in await store.read_log("m", 1, "0-0", 1000)] == kept
        finally:
            await store.close()

    asyncio.run(scenario())
