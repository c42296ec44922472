"""Log retention: a checkpoint write keeps the newest N entries (or the last T seconds) of the log
behind the oldest retained checkpoint, and never less than the checkpoints need."""

from __future__ import annotations

import time

import pytest

from model_store import LogRetention, RedisModelStore

from .factories import HOLDER, append, new_model

pytestmark = pytest.mark.anyio


@pytest.fixture
async def leased(store: RedisModelStore) -> RedisModelStore:
    await new_model(store)
    assert await store.lease("m", 1, HOLDER, 60) == HOLDER
    return store


async def _seqs(store: RedisModelStore) -> list[int | None]:
    return [e.seq for e in await store.read_log("m", 1, "0-0", 1000)]


async def test_the_newest_n_entries_stay_behind_the_checkpoints(leased: RedisModelStore) -> None:
    store = leased
    entries = await append(store, 40)
    retain = LogRetention(entries=25)
    for seq in (10, 20, 30, 35):
        at = entries[seq - 1]
        assert await store.write_checkpoint("m", 1, b"s", at.stream_id, seq, time.time(), 2, HOLDER, retain)
    # checkpoints at 35 and 30 are kept; without retention the log would start at entry 30
    assert await _seqs(store) == list(range(16, 41))
    more = await append(store, 30)
    at = more[-1]
    assert await store.write_checkpoint("m", 1, b"s", at.stream_id, 70, time.time(), 2, HOLDER, retain)
    # the oldest retained checkpoint (35) needs more than 25 entries: it wins
    assert await _seqs(store) == list(range(35, 71))


async def test_the_last_t_seconds_stay(leased: RedisModelStore) -> None:
    store = leased
    old = await append(store, 5)
    time.sleep(0.3)
    recent = await append(store, 5)
    time.sleep(0.05)
    retain = LogRetention(seconds=0.2)
    at = recent[-1]
    assert await store.write_checkpoint("m", 1, b"s", at.stream_id, 10, time.time(), 1, HOLDER, retain)
    assert await _seqs(store) == list(range(6, 11))  # the 5 older than 0.2 s are gone
    assert old[-1].seq == 5


async def test_without_retention_the_log_starts_at_the_oldest_checkpoint(leased: RedisModelStore) -> None:
    store = leased
    entries = await append(store, 10)
    for seq in (4, 8):
        at = entries[seq - 1]
        assert await store.write_checkpoint("m", 1, b"s", at.stream_id, seq, time.time(), 1, HOLDER)
    assert await _seqs(store) == [8, 9, 10]


def test_a_retention_is_by_entries_or_by_seconds() -> None:
    with pytest.raises(ValueError):
        LogRetention(entries=10, seconds=5.0)
    with pytest.raises(ValueError):
        LogRetention(entries=-1)
