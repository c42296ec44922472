"""Group commit for pending predictions: the requests of one event-loop tick share one store call.

A prediction is answered only once its pending record is stored (a label that arrives right
after the answer, on any replica, must find it). Instead of one store round trip per request,
every request that stores predictions during one turn of the event loop joins that turn's
batch; at the end of the turn (``loop.call_soon``) the batch goes to the store as **one**
``put_pending`` call (one script run in Redis), and each request resumes with the outcome of
that call: it is answered only after the call that holds its predictions has returned. Under
load, the store cost per prediction falls with the number of requests that arrive together;
alone, a request pays one round trip, as before, and waits for no other batch: the calls of
successive turns run concurrently (each is atomic in the store).

If a combined batch would pass the per-model pending limit, its requests are retried one by
one, so a request is refused only for its own predictions.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from model_store import PendingLimitExceeded, PendingPrediction, PendingStore

from .cancellation import reraise_cancellation

MAX_GROUP = 5000
"""A tick's batch goes to the store at once when it reaches this many predictions."""


@dataclass(slots=True)
class _Batch:
    items: Sequence[PendingPrediction]
    future: asyncio.Future[None] = field(repr=False)


class PendingWriter:
    """Stores a model's pending predictions a tick's worth at a time; ``put`` returns once stored."""

    def __init__(
        self, store: PendingStore, model: str, generation: int, ttl: float, limit: int | None
    ) -> None:
        self.store = store
        self.model = model
        self.generation = generation
        self.ttl = ttl
        self.limit = limit
        self._tick: list[_Batch] | None = None
        self._size = 0
        self._calls: set[asyncio.Task[None]] = set()
        self._stopped: Exception | None = None

    async def put(self, items: Sequence[PendingPrediction]) -> None:
        """Store ``items``; raises what the store raised (``StoreUnavailable``, ``PendingLimitExceeded``)."""
        if self._stopped is not None:
            raise self._stopped
        loop = asyncio.get_running_loop()
        batch = _Batch(items, loop.create_future())
        if self._tick is None:
            self._tick, self._size = [], 0
            loop.call_soon(self._flush)
        self._tick.append(batch)
        self._size += len(items)
        if self._size >= MAX_GROUP:
            self._flush()
        await batch.future

    async def stop(self, error: Exception) -> None:
        """Stop storing; requests not yet stored fail with ``error``."""
        self._stopped = error
        if self._tick is not None:
            _fail(self._tick, error)
            self._tick = None
        calls = list(self._calls)
        for call in calls:
            call.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 2.0)

    def _flush(self) -> None:
        batches, self._tick = self._tick or [], None
        if not batches:
            return
        call = asyncio.get_running_loop().create_task(self._store_tick(batches), name=f"pending:{self.model}")
        self._calls.add(call)
        call.add_done_callback(self._calls.discard)

    async def _store_tick(self, batches: list[_Batch]) -> None:
        try:
            if len(batches) == 1:
                await self._store(batches[0].items)
            else:
                await self._store([item for b in batches for item in b.items])
        except PendingLimitExceeded as exc:
            if len(batches) == 1:
                _fail(batches, exc)
                return
            for batch in batches:  # each request on its own: refuse only what does not fit
                try:
                    await self._store(batch.items)
                    _done([batch])
                except Exception as error:
                    reraise_cancellation()
                    _fail([batch], error)
            return
        except asyncio.CancelledError:
            _fail(batches, self._stopped or RuntimeError("the pending writer stopped"))
            raise
        except Exception as exc:  # StoreUnavailable, or anything else: the requests see it
            reraise_cancellation()
            _fail(batches, exc)
            return
        _done(batches)

    async def _store(self, items: Sequence[PendingPrediction]) -> None:
        await self.store.put_pending(self.model, self.generation, items, self.ttl, self.limit)


def _done(batches: list[_Batch]) -> None:
    for batch in batches:
        if not batch.future.done():
            batch.future.set_result(None)


def _fail(batches: list[_Batch], error: BaseException) -> None:
    for batch in batches:
        if not batch.future.done():
            batch.future.set_exception(error)
