"""Group commit for pending predictions: concurrent /predict requests share one store call.

A prediction is answered only once its pending record is stored (a label that arrives
right after the answer must find it). Instead of one store round trip per request, one
task per model takes every batch queued so far and stores them with a single
``put_pending`` call; each request then resumes with the outcome of the call that held its
predictions. Under load, the store cost per prediction falls with the number of requests
in flight; alone, a request pays one round trip, as before.

If the combined batch would pass the per-model pending limit, the batches are retried one
by one, so a request is refused only for its own predictions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from model_store import PendingLimitExceeded, PendingPrediction, PendingStore

from .cancellation import finish, reraise_cancellation

MAX_GROUP = 5000


@dataclass(slots=True)
class _Batch:
    items: Sequence[PendingPrediction]
    future: asyncio.Future[None] = field(repr=False)


class PendingWriter:
    """Stores a model's pending predictions in groups; ``put`` returns once they are stored."""

    def __init__(
        self, store: PendingStore, model: str, generation: int, ttl: float, limit: int | None
    ) -> None:
        self.store = store
        self.model = model
        self.generation = generation
        self.ttl = ttl
        self.limit = limit
        self._queue: asyncio.Queue[_Batch] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def put(self, items: Sequence[PendingPrediction]) -> None:
        """Store ``items``; raises what the store raised (``StoreUnavailable``, ``PendingLimitExceeded``)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"pending:{self.model}")
        batch = _Batch(items, asyncio.get_running_loop().create_future())
        await self._queue.put(batch)
        await batch.future

    async def stop(self, error: Exception) -> None:
        """Stop storing; queued requests fail with ``error``."""
        await finish(self._task, 2.0, cancel_first=True)
        while not self._queue.empty():
            _fail([self._queue.get_nowait()], error)

    async def _run(self) -> None:
        while True:
            batches = [await self._queue.get()]
            size = len(batches[0].items)
            while not self._queue.empty() and size < MAX_GROUP:
                batch = self._queue.get_nowait()
                batches.append(batch)
                size += len(batch.items)
            try:
                await self._store([item for b in batches for item in b.items])
            except PendingLimitExceeded as exc:
                if len(batches) == 1:
                    _fail(batches, exc)
                    continue
                for batch in batches:  # each request on its own: refuse only what does not fit
                    try:
                        await self._store(batch.items)
                        _done([batch])
                    except Exception as exc:
                        _fail([batch], exc)
                continue
            except Exception as exc:  # StoreUnavailable, or anything else: the requests see it
                reraise_cancellation()
                _fail(batches, exc)
                continue
            _done(batches)

    async def _store(self, items: Sequence[PendingPrediction]) -> None:
        await self.store.put_pending(self.model, self.generation, items, self.ttl, self.limit)


def _done(batches: list[_Batch]) -> None:
    for batch in batches:
        if not batch.future.done():
            batch.future.set_result(None)


def _fail(batches: list[_Batch], error: Exception) -> None:
    for batch in batches:
        if not batch.future.done():
            batch.future.set_exception(error)
