"""The single writer of a model: append labels to the log, then apply the log in order.

Requests never touch the learner. They queue a job and wait for its future. One task per
model takes every job queued so far (group commit), makes **one** store call for each run
of consecutive label jobs (``label``) or example jobs (``append_examples``), applies every
log entry the store returns after the last applied one, in stream order (its own and any
other replica's), and only then resolves the futures. So:

- an answered label is durable (appended before the reply) and applied (the reply carries
  the version that includes it);
- the stream, not arrival order, defines the order of updates;
- there is one store call in flight per model, whatever the request concurrency.

Checkpoint jobs go through the same queue, so a checkpoint always captures a state between
two applied entries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from model_store import Example, LabelOutcome, LogEntry, ModelStore

from .errors import ModelUnavailable
from .runtime import Applied, ModelRuntime

log = logging.getLogger("acog.engine")

MAX_GROUP = 2000
"""At most this many labels go into one store call."""


@dataclass(slots=True)
class LabelJob:
    items: list[tuple[str, int]]
    future: asyncio.Future[list[tuple[LabelOutcome, Applied | None]]] = field(repr=False)


@dataclass(slots=True)
class ExampleJob:
    items: list[tuple[Example, int]]
    future: asyncio.Future[list[Applied]] = field(repr=False)


@dataclass(slots=True)
class CheckpointJob:
    future: asyncio.Future[bool] = field(repr=False)


Job = LabelJob | ExampleJob | CheckpointJob


@dataclass(frozen=True, slots=True)
class WriterSettings:
    label_window_seconds: float
    done_ttl_seconds: float
    checkpoint_every_events: int
    checkpoints_kept: int
    fault_delay_seconds: float = 0.0


class LabelWriter:
    """The task that owns a runtime's updates; see the module docstring."""

    def __init__(
        self,
        runtime: ModelRuntime,
        store: ModelStore,
        settings: WriterSettings,
        on_applied: Callable[[ModelRuntime, Applied], None],
        on_checkpoint: Callable[[ModelRuntime, float], None],
    ) -> None:
        self.runtime = runtime
        self.store = store
        self.settings = settings
        self.on_applied = on_applied
        self.on_checkpoint = on_checkpoint
        self.queue: asyncio.Queue[Job] = asyncio.Queue(maxsize=10_000)
        self.failure: str | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"writer:{self.runtime.name}")

    async def stop(self, error: Exception) -> None:
        """Stop taking jobs; queued ones fail with ``error``."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        while not self.queue.empty():
            job = self.queue.get_nowait()
            if not job.future.done():
                job.future.set_exception(error)

    async def submit_labels(self, items: list[tuple[str, int]]) -> list[tuple[LabelOutcome, Applied | None]]:
        job = LabelJob(items, asyncio.get_running_loop().create_future())
        await self.queue.put(job)
        return await job.future

    async def submit_examples(self, items: list[tuple[Example, int]]) -> list[Applied]:
        job = ExampleJob(items, asyncio.get_running_loop().create_future())
        await self.queue.put(job)
        return await job.future

    async def checkpoint(self) -> bool:
        job = CheckpointJob(asyncio.get_running_loop().create_future())
        await self.queue.put(job)
        return await job.future

    # --- the task -------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            jobs = [await self.queue.get()]
            size = _size(jobs[0])
            while not self.queue.empty() and size < MAX_GROUP:
                job = self.queue.get_nowait()
                jobs.append(job)
                size += _size(job)
            for group in _runs_of_same_kind(jobs):
                await self._process(group)
            if (
                self.runtime.version - self.runtime.checkpointed_version
                >= self.settings.checkpoint_every_events
            ):
                with contextlib.suppress(Exception):  # logged in _write_checkpoint; retried next time
                    await self._write_checkpoint()

    async def _process(self, group: Sequence[Job]) -> None:
        try:
            if isinstance(group[0], LabelJob):
                await self._labels([j for j in group if isinstance(j, LabelJob)])
            elif isinstance(group[0], ExampleJob):
                await self._examples([j for j in group if isinstance(j, ExampleJob)])
            else:
                for job in group:
                    _resolve(job.future, await self._write_checkpoint())
        except Exception as exc:  # a store outage, or a bug: fail these jobs, keep serving others
            error: Exception = exc
            if self.failure is not None:  # the learner failed on a logged entry: the model stopped (503)
                error = ModelUnavailable("model", f"model {self.runtime.name!r} stopped: {self.failure}")
            for job in group:
                if not job.future.done():
                    job.future.set_exception(error)

    async def _labels(self, jobs: list[LabelJob]) -> None:
        rt = self.runtime
        items = [item for job in jobs for item in job.items]
        result = await self.store.label(
            rt.name,
            rt.generation,
            items,
            time.time(),
            rt.applied_id,
            self.settings.done_ttl_seconds,
            self.settings.label_window_seconds,
        )
        applied = self._apply(result.backlog)
        outcomes = iter(result.outcomes)
        for job in jobs:
            answers = []
            for _ in job.items:
                outcome = next(outcomes)
                answers.append((outcome, applied.get(outcome.stream_id or "")))
            _resolve(job.future, answers)

    async def _examples(self, jobs: list[ExampleJob]) -> None:
        rt = self.runtime
        items = [item for job in jobs for item in job.items]
        result = await self.store.append_examples(rt.name, rt.generation, items, time.time(), rt.applied_id)
        applied = self._apply(result.backlog)
        by_pid = {a.prediction_id: a for a in applied.values()}
        ids = iter(result.prediction_ids)
        for job in jobs:
            _resolve(job.future, [by_pid[next(ids)] for _ in job.items])

    def _apply(self, backlog: Sequence[LogEntry]) -> dict[str, Applied]:
        """Apply, in order, the entries after the last applied one; a failure here stops the model."""
        done: dict[str, Applied] = {}
        for entry in backlog:
            if not self.runtime.is_after(entry.stream_id):
                continue
            try:
                applied = self.runtime.apply(entry)
            except Exception as exc:
                self.failure = f"applying log entry {entry.stream_id} failed: {exc!r}"
                log.exception("model %s: %s", self.runtime.name, self.failure)
                raise
            done[entry.stream_id] = applied
            self.on_applied(self.runtime, applied)
        return done

    async def _write_checkpoint(self) -> bool:
        rt = self.runtime
        if rt.version == rt.checkpointed_version:
            return False
        # The snapshot borrows the live arrays (read-only; the learner refuses to learn until the
        # block ends), and encoding (memcpy and SHA-256, which release the GIL) runs in a thread:
        # predictions go on being served while a large model is checkpointed.
        with rt.borrowed_snapshot() as snapshot:
            blob = await asyncio.to_thread(snapshot.encode)
        log.info("model %s: writing checkpoint at version %d", rt.name, snapshot.version)
        if self.settings.fault_delay_seconds:
            await asyncio.sleep(self.settings.fault_delay_seconds)
        try:
            written = await self.store.write_checkpoint(
                rt.name, rt.generation, blob, snapshot.applied_id, self.settings.checkpoints_kept
            )
        except Exception:
            log.exception("model %s: checkpoint at version %d failed", rt.name, rt.version)
            raise
        rt.checkpointed_version = snapshot.version
        rt.checkpointed_at = snapshot.written_at
        log.info("model %s: checkpoint at version %d written", rt.name, snapshot.version)
        self.on_checkpoint(rt, snapshot.written_at)
        return written


def _size(job: Job) -> int:
    return len(job.items) if isinstance(job, LabelJob | ExampleJob) else 1


def _runs_of_same_kind(jobs: list[Job]) -> list[list[Job]]:
    runs: list[list[Job]] = []
    for job in jobs:
        if runs and type(runs[-1][0]) is type(job):
            runs[-1].append(job)
        else:
            runs.append([job])
    return runs


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)
