"""The pending writer's group commit, against a real Redis: the requests of one event-loop tick
share one store call, those arriving while a call is in flight share the next one, and a request
resumes only once the call that holds its predictions has stored them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence

import pytest
import redis

from model_store import (
    ConnectionSettings,
    PendingLimitExceeded,
    PendingPrediction,
    RedisModelStore,
    StoreUnavailable,
)
from service.engine.pending import MAX_CALLS, PendingWriter

from ..store.factories import get_pending, pending

pytestmark = pytest.mark.anyio


class CountingStore(RedisModelStore):
    """The real store, counting its ``put_pending`` calls."""

    calls: list[int]
    gate: asyncio.Event | None = None
    """When set, a call waits for it before it stores (a slow round trip)."""

    async def put_pending(
        self,
        model: str,
        generation: int,
        items: Sequence[PendingPrediction],
        ttl_seconds: float,
        max_pending: int | None = None,
    ) -> None:
        self.calls.append(len(items))
        if self.gate is not None:
            await self.gate.wait()
        await super().put_pending(model, generation, items, ttl_seconds, max_pending)


@pytest.fixture
async def store(redis_client: redis.Redis, redis_url: str) -> AsyncIterator[CountingStore]:
    counting = CountingStore.from_url(redis_url)
    assert isinstance(counting, CountingStore)
    counting.calls = []
    counting.gate = None
    yield counting
    await counting.close()


async def test_the_requests_of_one_tick_share_one_store_call_and_resume_once_stored(
    store: CountingStore,
) -> None:
    writer = PendingWriter(store, "m", 1, ttl=60, limit=None)
    requests = [[pending("m", 1, seed)] for seed in range(20)]

    async def put_then_read(items: list[PendingPrediction]) -> PendingPrediction | None:
        await writer.put(items)
        return await get_pending(store, items[0].prediction_id)  # a label arriving at once finds it

    found = await asyncio.gather(*(put_then_read(items) for items in requests))
    assert found == [items[0] for items in requests]
    assert store.calls == [20]
    await writer.put([pending("m", 1, 99)])  # alone: its own call
    assert store.calls == [20, 1]
    assert await store.count_pending("m", 1, time.time()) == 21


async def test_requests_arriving_while_the_calls_are_in_flight_go_together_as_the_next_call(
    store: CountingStore,
) -> None:
    store.gate = asyncio.Event()
    writer = PendingWriter(store, "m", 1, ttl=60, limit=None)
    puts = []
    for seed in range(MAX_CALLS + 5):  # one request a tick
        puts.append(asyncio.ensure_future(writer.put([pending("m", 1, seed)])))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    assert store.calls == [1] * MAX_CALLS  # each held at the gate; the other 5 wait for them
    assert not any(p.done() for p in puts)
    store.gate.set()
    await asyncio.gather(*puts)
    assert store.calls == [1] * MAX_CALLS + [5]
    assert await store.count_pending("m", 1, time.time()) == MAX_CALLS + 5


async def test_a_tick_over_the_limit_refuses_only_the_requests_that_do_not_fit(store: CountingStore) -> None:
    writer = PendingWriter(store, "m", 1, ttl=60, limit=3)
    outcomes = await asyncio.gather(
        writer.put([pending("m", 1, 0), pending("m", 1, 1)]),
        writer.put([pending("m", 1, 2), pending("m", 1, 3)]),
        return_exceptions=True,
    )
    assert outcomes[0] is None
    assert isinstance(outcomes[1], PendingLimitExceeded)
    assert await store.count_pending("m", 1, time.time()) == 2


async def test_a_store_failure_reaches_every_request_of_the_tick(redis_url: str) -> None:
    quick = ConnectionSettings(connect_timeout=0.5, retries=0)
    broken = RedisModelStore.from_url("redis://127.0.0.1:1/0", quick)  # nothing listens there
    writer = PendingWriter(broken, "m", 1, ttl=60, limit=None)
    outcomes = await asyncio.gather(
        *(writer.put([pending("m", 1, seed)]) for seed in range(3)), return_exceptions=True
    )
    assert all(isinstance(o, StoreUnavailable) for o in outcomes), outcomes
    await broken.close()


async def test_stopping_fails_the_requests_not_yet_stored(store: CountingStore) -> None:
    writer = PendingWriter(store, "m", 1, ttl=60, limit=None)
    put = asyncio.ensure_future(writer.put([pending("m", 1)]))
    await asyncio.sleep(0)  # queued in this tick's batch, not yet sent
    gone = RuntimeError("stopped")
    await writer.stop(gone)
    with pytest.raises(RuntimeError, match="stopped"):
        await put
    with pytest.raises(RuntimeError, match="stopped"):
        await writer.put([pending("m", 1, 1)])
