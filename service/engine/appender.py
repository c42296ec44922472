"""Group commit of a model's labels: concurrent requests share one store call.

A request queues a job and waits for its future. One task per model takes every job queued so
far and makes **one** store call for each run of consecutive label jobs (``store.label``) or
example jobs (``store.append_examples``), then resolves each job with its outcomes. Appending is
all this does: the model's log follower (:mod:`service.engine.replica`) applies every entry, this
replica's and every other one's, in log order, and the request then waits for its own entries to
be applied. Under load the store cost per label falls with the number of requests in flight;
alone, a label pays one round trip.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from model_store import AppendResult, Example, LabelLog, LabelOutcome, PredictionId

from .cancellation import finish, reraise_cancellation

MAX_GROUP = 2000
"""At most this many labels go into one store call."""


@dataclass(slots=True)
class _LabelJob:
    items: list[tuple[PredictionId, int]]
    future: asyncio.Future[list[LabelOutcome]] = field(repr=False)


@dataclass(slots=True)
class _ExampleJob:
    items: list[tuple[Example, int]]
    future: asyncio.Future[AppendResult] = field(repr=False)


_Job = _LabelJob | _ExampleJob


@dataclass(frozen=True, slots=True)
class AppendSettings:
    label_window_seconds: float
    done_ttl_seconds: float


class Appender:
    """The task that appends one model generation's labels; see the module docstring."""

    def __init__(self, store: LabelLog, model: str, generation: int, settings: AppendSettings) -> None:
        self.store = store
        self.model = model
        self.generation = generation
        self.settings = settings
        self._queue: asyncio.Queue[_Job] = asyncio.Queue(maxsize=10_000)
        self._task: asyncio.Task[None] | None = None

    async def labels(self, items: list[tuple[PredictionId, int]]) -> list[LabelOutcome]:
        """Append ``(prediction_id, y)`` labels; one outcome each, in order."""
        job = _LabelJob(items, asyncio.get_running_loop().create_future())
        await self._submit(job)
        return await job.future

    async def examples(self, items: list[tuple[Example, int]]) -> AppendResult:
        """Append labelled examples that were never scored."""
        job = _ExampleJob(items, asyncio.get_running_loop().create_future())
        await self._submit(job)
        return await job.future

    async def stop(self, error: Exception) -> None:
        """Stop appending; queued jobs fail with ``error``."""
        await finish(self._task, 2.0, cancel_first=True)
        while not self._queue.empty():
            _fail(self._queue.get_nowait().future, error)

    async def _submit(self, job: _Job) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"appender:{self.model}")
        if self._queue.full():  # 10,000 jobs waiting: this request waits for room
            await self._queue.put(job)
        else:  # no coroutine per label for a put that cannot wait
            self._queue.put_nowait(job)

    async def _run(self) -> None:
        while True:
            jobs = [await self._queue.get()]
            size = len(jobs[0].items)
            while not self._queue.empty() and size < MAX_GROUP:
                job = self._queue.get_nowait()
                jobs.append(job)
                size += len(job.items)
            for run in _runs_of_same_kind(jobs):
                try:
                    await self._append(run)
                except Exception as exc:  # a store outage, a gone generation: these jobs see it
                    reraise_cancellation()
                    for job in run:
                        _fail(job.future, exc)

    async def _append(self, run: Sequence[_Job]) -> None:
        label_jobs = [job for job in run if isinstance(job, _LabelJob)]
        example_jobs = [job for job in run if isinstance(job, _ExampleJob)]
        if label_jobs:
            outcomes = await self.store.label(
                self.model,
                self.generation,
                [item for job in label_jobs for item in job.items],
                time.time(),
                self.settings.done_ttl_seconds,
                self.settings.label_window_seconds,
            )
            answers = iter(outcomes)
            for label_job in label_jobs:
                _resolve(label_job.future, [next(answers) for _ in label_job.items])
        if example_jobs:
            result = await self.store.append_examples(
                self.model, self.generation, [item for job in example_jobs for item in job.items], time.time()
            )
            ids, entries = iter(result.prediction_ids), iter(result.entries)
            for example_job in example_jobs:
                count = len(example_job.items)
                _resolve(
                    example_job.future,
                    AppendResult([next(ids) for _ in range(count)], [next(entries) for _ in range(count)]),
                )


def _runs_of_same_kind(jobs: list[_Job]) -> list[list[_Job]]:
    runs: list[list[_Job]] = []
    for job in jobs:
        if runs and type(runs[-1][0]) is type(job):
            runs[-1].append(job)
        else:
            runs.append([job])
    return runs


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[Any], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)
