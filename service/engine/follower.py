"""The follower of a model replica: recovery, then following the log.

The one task that changes a replica's runtime (:class:`service.engine.runtime.ModelRuntime`): it
restores the newest usable checkpoint, replays the log after it, then tails the log with a
blocking read and applies every entry in sequence, whichever replica appended it. An entry that is
not ``version + 1`` is a gap (the log was trimmed past this replica's position): it reloads the
newest checkpoint and replays from there, and never skips an entry; a log that lost entries
applied here (:class:`LogRewound`) is rebuilt from a checkpoint before them. A request that
appended an entry waits here until the entry is applied. :class:`ModelReplica`
(:mod:`service.engine.replica`), the append path, is built on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from model_store import (
    NO_RETENTION,
    CodecError,
    LogEntry,
    LogRetention,
    ReplicaStore,
    StoreError,
    StoreUnavailable,
)

from ..model_config import ModelConfig
from .cancellation import reraise_cancellation
from .checkpoint import CheckpointMismatch, Snapshot
from .checkpoint_writer import CheckpointWriter
from .errors import ModelUnavailable
from .observer import Observer
from .runtime import Applied, LogGap, LogRewound, ModelRuntime

log = logging.getLogger("acog.engine")

READ_BATCH = 1000
"""Log entries read per call, when recovering and when following."""


class Status(StrEnum):
    RECOVERING = "recovering"
    SERVING = "serving"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class ReplicaSettings:
    replica_id: str
    """Who this process is, for the checkpoint-writer lease (unique per process)."""
    label_window_seconds: float
    done_ttl_seconds: float
    checkpoint_every_events: int
    checkpoint_every_seconds: float
    checkpoints_kept: int
    lease_seconds: float
    """How long the writer lease lasts unless renewed (renewed every third of it)."""
    follow_block_seconds: float
    """A blocking log read returns after this long without entries (then housekeeping runs)."""
    apply_timeout_seconds: float
    """How long a label request waits for its entry to be applied here before answering 503."""
    max_pending: int | None
    memory_budget: int
    metrics_window: int
    fault_delay_seconds: float = 0.0
    log_retention: LogRetention = NO_RETENTION
    """What each checkpoint write keeps of the log behind the oldest retained checkpoint."""


class LogFollower:
    """Recovery and the follower task of one model generation (see the module docstring); the
    state is :class:`ModelReplica`'s."""

    name: str
    generation: int
    config: ModelConfig
    store: ReplicaStore
    settings: ReplicaSettings
    observer: Observer
    runtime: ModelRuntime
    status: Status
    failure: str | None
    resyncs: int
    writer: CheckpointWriter
    _follower: asyncio.Task[None] | None
    _waiters: dict[int, list[asyncio.Future[Applied | None]]]
    _stopping: bool
    _state: asyncio.Lock

    async def start(self) -> None:
        """Recover (newest usable checkpoint, then the log after it), then follow the log."""
        try:
            await self._load_checkpoint(minimum=0)
            checkpointed = self.runtime.version
            await self._catch_up()
        except _Fatal as exc:
            self._fail(str(exc))
            return
        log.info(
            "model %s (generation %d): recovered at version %d (%d replayed)",
            self.name,
            self.generation,
            self.runtime.version,
            self.runtime.version - checkpointed,
        )
        self.status = Status.SERVING
        self._follower = asyncio.create_task(self._follow(), name=f"follower:{self.name}")

    def check_serving(self) -> None:
        if self.status is Status.FAILED:
            raise ModelUnavailable("model", f"model {self.name!r} cannot serve: {self.failure}")
        if self.status is not Status.SERVING:
            raise ModelUnavailable("model", f"model {self.name!r} is {self.status.value}")

    # --- applying the log -----------------------------------------------------------------

    async def _until_applied(self, seq: int) -> Applied | None:
        """The application of entry ``seq`` on this replica, once the follower got there (one
        future and one timer per waiting label: no task, no shield)."""
        runtime = self.runtime
        if seq <= runtime.version:
            return runtime.recent.get(seq)
        self.check_serving()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Applied | None] = loop.create_future()
        self._waiters.setdefault(seq, []).append(future)
        timer = loop.call_later(self.settings.apply_timeout_seconds, self._not_applied, future, seq)
        try:
            return await future
        finally:
            timer.cancel()

    def _not_applied(self, future: asyncio.Future[Applied | None], seq: int) -> None:
        if not future.done():
            future.set_exception(
                StoreUnavailable(
                    f"label entry {seq} of {self.name} was appended but not applied here within "
                    f"{self.settings.apply_timeout_seconds:g} s; a retry answers its outcome",
                    retry_after=1,
                )
            )

    def _apply(self, entries: Sequence[LogEntry]) -> None:
        """Apply entries in order; raises :class:`LogGap` at a gap (the entries before it stay applied)."""
        now = time.time()
        for entry in entries:
            try:
                applied = self.runtime.apply(entry)
            except (LogGap, LogRewound):
                raise
            except Exception as exc:
                raise _Fatal(f"applying log entry {entry.seq} ({entry.stream_id}) failed: {exc!r}") from exc
            if applied is None:
                continue
            if applied.kind == "label":
                self.observer.applied(self.name, applied, max(0.0, now - entry.labelled_at))
            for future in self._waiters.pop(applied.seq, ()):
                if not future.done():
                    future.set_result(applied)

    async def _catch_up(self) -> None:
        """Read and apply the log to its end (recovery), reloading a checkpoint at a gap."""
        while entries := await self.store.read_log(
            self.name, self.generation, self.runtime.applied_id, READ_BATCH
        ):
            await self._apply_or_recover(entries)

    async def _apply_or_recover(self, entries: Sequence[LogEntry]) -> None:
        """Apply ``entries``; at a gap carry on from a newer checkpoint, at a rewound log from an
        older one."""
        try:
            self._apply(entries)
        except LogGap as gap:
            await self._resync(gap)
        except LogRewound as rewound:
            await self._rewind(rewound)

    async def _resync(self, gap: LogGap) -> None:
        """Entries after this replica's position are gone: carry on from a checkpoint past them."""
        log.warning("model %s: %s; reloading a newer checkpoint", self.name, gap)
        await self._load_checkpoint(minimum=gap.got - 1)
        self.resyncs += 1
        self.observer.resynced(self.name)
        for seq in [s for s in self._waiters if s <= self.runtime.version]:
            for future in self._waiters.pop(seq):
                if not future.done():
                    future.set_result(None)  # applied, as part of the checkpoint's state

    async def _rewind(self, rewound: LogRewound) -> None:
        """The log lost entries this replica applied: rebuild from a checkpoint before them."""
        log.error(
            "model %s: %s; rebuilding from a checkpoint before entry %d", self.name, rewound, rewound.seq
        )
        await self._load_checkpoint(minimum=0, maximum=rewound.seq - 1)
        self.resyncs += 1
        self.observer.resynced(self.name)

    async def _load_checkpoint(self, minimum: int, maximum: int | None = None) -> None:
        """Restore the newest checkpoint that decodes, whose state reaches entry ``minimum`` (a gap's
        end; 0 on a fresh start) and does not pass entry ``maximum`` (where the log rewound). With
        ``maximum`` and no such checkpoint, start afresh (the log then replays from its start)."""
        tried = 0
        async for checkpoint in self.store.iter_checkpoints(self.name, self.generation):  # newest first
            if maximum is not None and (checkpoint.seq is None or checkpoint.seq > maximum):
                continue
            if checkpoint.seq is not None and checkpoint.seq < minimum:
                break  # older than what we need
            tried += 1
            try:
                self.runtime.restore(
                    Snapshot.decode(checkpoint.blob, self.generation, self.runtime.config_json)
                )
            except (CodecError, CheckpointMismatch, ValueError, KeyError, TypeError) as exc:
                log.error(
                    "model %s: checkpoint at %s is unusable (%s); trying an older one",
                    self.name,
                    checkpoint.applied_id,
                    exc,
                )
                continue
            if self.runtime.version >= minimum:
                return
        if maximum is not None:
            self.runtime = ModelRuntime(
                self.name,
                self.generation,
                self.config,
                self.settings.memory_budget,
                self.settings.metrics_window,
            )
            return
        if minimum:
            raise _Fatal(
                f"log entries after {self.runtime.version} are gone and no usable checkpoint reaches "
                f"entry {minimum}"
            )
        if tried:  # each checkpoint write trims the log: without one, it cannot be replayed
            raise _Fatal("no stored checkpoint could be decoded and the log before them is trimmed")

    async def _follow(self) -> None:
        """The follower task: tail the log, apply, keep the lease, checkpoint; see the module docstring."""
        backoff = 0.05
        while not self._stopping:
            try:
                entries = await self.store.follow_log(
                    self.name,
                    self.generation,
                    self.runtime.applied_id,
                    READ_BATCH,
                    self.settings.follow_block_seconds,
                )
                async with self._state:
                    await self._apply_or_recover(entries)
                await self.writer.housekeeping()
                backoff = 0.05
            except asyncio.CancelledError:
                raise
            except _Fatal as exc:
                self._fail(str(exc))
                return
            except StoreError as exc:  # an outage: keep trying; predictions go on from memory
                reraise_cancellation()
                log.warning("model %s: following the log failed (%s); retrying", self.name, exc)
                await asyncio.sleep(backoff)
                backoff = min(1.0, backoff * 2)

    # --- failure --------------------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        self.status = Status.FAILED
        self.failure = reason
        log.error("model %s (generation %d) failed: %s", self.name, self.generation, reason)
        self._fail_waiters(ModelUnavailable("model", f"model {self.name!r} stopped: {reason}"))

    def _fail_waiters(self, error: Exception) -> None:
        waiting: list[asyncio.Future[Any]] = [f for futures in self._waiters.values() for f in futures]
        waiting += self.writer.waiting()
        self._waiters.clear()
        for future in waiting:
            if not future.done():
                future.set_exception(error)


class _Fatal(Exception):
    """The replica cannot go on (the learner failed on a logged entry, the log cannot be recovered)."""
