"""Group commit for pending predictions: concurrent requests share one store call.

A prediction is answered only once its pending record is stored (a label that arrives right
after the answer, on any replica, must find it). Instead of one store round trip per request,
each model keeps at most :data:`MAX_CALLS` ``put_pending`` calls (each one script run in Redis)
in flight:

- a request that stores predictions while fewer are in flight joins the batch of the current
  turn of the event loop, which goes to the store at the end of that turn (``loop.call_soon``):
  alone, a request pays one round trip, as before;
- requests that arrive while that many calls are in flight queue up, and the queue goes to the
  store as one call as soon as one of them returns (at most :data:`MAX_GROUP` predictions a call).

Each request resumes with the outcome of the call that holds its predictions: it is answered
only after that call has returned. Under load the store cost per prediction (the client's
command packing, the socket writes and reads, the script run in Redis) falls with the number of
predictions that arrive during one round trip, and a request waits at most for the calls in
flight before its own. :meth:`PendingWriter.submit` hands back the request's future without a
coroutine, so a caller that scores many messages (the WebSocket) needs no task per message.

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

MAX_CALLS = 8
"""Store calls of one model in flight at a time; what arrives while they are all in flight goes as
one call when the first returns. Redis runs them one after the other anyway (one pipelined
connection), so more calls in flight cost it a script run each but spare a request the wait for the
calls ahead of it: with 2, under concurrent single /predict requests the service waited on Redis
for part of its time. ``python -m bench.service_load`` measures the rate against a no-op app."""

MAX_GROUP = 5000
"""At most this many predictions go into one store call (a request's own batch is never split)."""


@dataclass(slots=True)
class _Batch:
    items: Sequence[PendingPrediction]
    future: asyncio.Future[None] = field(repr=False)


class PendingWriter:
    """Stores a model's pending predictions, at most :data:`MAX_CALLS` store calls in flight; ``put``
    (or the future of ``submit``) returns once stored."""

    def __init__(
        self, store: PendingStore, model: str, generation: int, ttl: float, limit: int | None
    ) -> None:
        self.store = store
        self.model = model
        self.generation = generation
        self.ttl = ttl
        self.limit = limit
        self._queued: list[_Batch] = []
        self._scheduled = False
        self._calls: set[asyncio.Task[None]] = set()
        self._stopped: Exception | None = None

    @property
    def calls(self) -> list[asyncio.Task[None]]:
        """The store calls in flight."""
        return list(self._calls)

    def submit(self, items: Sequence[PendingPrediction]) -> asyncio.Future[None]:
        """Queue ``items``; the future is done once they are stored, or fails with what the store
        raised (``StoreUnavailable``, ``PendingLimitExceeded``)."""
        if self._stopped is not None:
            raise self._stopped
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._queued.append(_Batch(items, future))
        if len(self._calls) < MAX_CALLS and not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        return future

    async def put(self, items: Sequence[PendingPrediction]) -> None:
        """Store ``items``; raises what the store raised (``StoreUnavailable``, ``PendingLimitExceeded``)."""
        await self.submit(items)

    async def stop(self, error: Exception) -> None:
        """Stop storing; requests not yet stored fail with ``error``."""
        self._stopped = error
        queued, self._queued = self._queued, []
        _fail(queued, error)
        calls = list(self._calls)
        for call in calls:
            call.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 2.0)

    def _flush(self) -> None:
        """Send what is queued as the next store call, unless one is in flight (its end sends it)."""
        self._scheduled = False
        if len(self._calls) >= MAX_CALLS or not self._queued or self._stopped is not None:
            return
        size, count = 0, 0
        for batch in self._queued:
            if count and size + len(batch.items) > MAX_GROUP:
                break
            size += len(batch.items)
            count += 1
        batches, self._queued = self._queued[:count], self._queued[count:]
        call = asyncio.get_running_loop().create_task(self._store_call(batches), name=f"pending:{self.model}")
        self._calls.add(call)
        call.add_done_callback(self._called)

    def _called(self, call: asyncio.Task[None]) -> None:
        self._calls.discard(call)
        self._flush()  # what queued up during the call goes now

    async def _store_call(self, batches: list[_Batch]) -> None:
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
