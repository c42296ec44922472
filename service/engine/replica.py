"""One model generation on this process: a replica of its label log.

Every serving process holds each model as a replica: the same entries, applied in the same
order, give the same bits (see :mod:`service.engine.runtime`). A :class:`ModelReplica` owns

- the **runtime** (learner, measures, registry, position in the log);
- the **follower**, the one task that changes the runtime: it tails the log with a blocking
  read, applies every entry in sequence, whichever replica appended it, so predictions here
  reflect labels acknowledged anywhere a few milliseconds earlier. An entry that is not
  ``version + 1`` is a gap (the log was trimmed past this replica's position): the follower
  reloads the newest checkpoint and replays from there, and never skips an entry;
- the **appender** (group commit of labels) and the **pending writer** (group commit of
  predictions); a label request appends, then waits until the follower has applied its entry,
  so the reply carries the version that includes it;
- the **checkpoint writer** (:mod:`service.engine.checkpoint_writer`): one replica at a time (the
  lease holder) writes the generation's checkpoints; the follower keeps its lease between reads.
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
    Example,
    LabelOutcome,
    LogEntry,
    LogRetention,
    PendingPrediction,
    PredictionId,
    ReplicaStore,
    StoreError,
    StoreUnavailable,
)

from ..model_config import ModelConfig
from .appender import Appender, AppendSettings
from .cancellation import finish, reraise_cancellation
from .checkpoint import CheckpointMismatch, Snapshot
from .checkpoint_writer import CheckpointWriter, WriterSettings
from .errors import ModelUnavailable
from .observer import Observer
from .pending import PendingWriter
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


@dataclass(frozen=True, slots=True)
class LabelAnswer:
    """A label's outcome on this replica: the store's outcome, and what applying it did (None when
    it was not applied here: a duplicate older than this replica's memory, or not appended)."""

    outcome: LabelOutcome
    applied: Applied | None


class ModelReplica:
    """See the module docstring. Create, then ``await start()``; ``await stop()`` at the end."""

    def __init__(
        self,
        name: str,
        generation: int,
        config: ModelConfig,
        store: ReplicaStore,
        settings: ReplicaSettings,
        observer: Observer,
    ) -> None:
        self.name = name
        self.generation = generation
        self.config = config
        self.store = store
        self.settings = settings
        self.observer = observer
        self.runtime = ModelRuntime(name, generation, config, settings.memory_budget, settings.metrics_window)
        self.status = Status.RECOVERING
        self.failure: str | None = None
        self.pending_count: int | None = None
        self.resyncs = 0
        self._appender = Appender(
            store, name, generation, AppendSettings(settings.label_window_seconds, settings.done_ttl_seconds)
        )
        self._pending = PendingWriter(
            store, name, generation, settings.label_window_seconds, settings.max_pending
        )
        self._follower: asyncio.Task[None] | None = None
        self._waiters: dict[int, list[asyncio.Future[Applied | None]]] = {}
        self._stopping = False
        self._state = asyncio.Lock()
        """Held while the runtime changes (the follower applies) or is encoded (a checkpoint)."""
        writer_settings = WriterSettings(
            settings.replica_id,
            settings.checkpoint_every_events,
            settings.checkpoint_every_seconds,
            settings.checkpoints_kept,
            settings.lease_seconds,
            settings.fault_delay_seconds,
            settings.log_retention,
        )
        self.writer = CheckpointWriter(
            store, name, generation, writer_settings, observer, lambda: self.runtime, self._state
        )

    # --- life cycle -----------------------------------------------------------------------

    @property
    def is_writer(self) -> bool:
        return self.writer.is_writer

    @property
    def lease_holder(self) -> str:
        return self.writer.lease_holder

    @property
    def _upload(self) -> asyncio.Task[None] | None:
        return self.writer.upload

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

    async def stop(self, error: Exception, *, checkpoint: bool = False) -> None:
        """Stop following and appending (waiting requests fail with ``error``). With ``checkpoint``,
        the lease holder first writes a checkpoint of where it stopped (a clean shutdown)."""
        self._stopping = True
        await finish(self._follower, self.settings.follow_block_seconds + 2)
        await self._appender.stop(error)
        await self._pending.stop(error)
        await self.writer.finish(checkpoint and self.status is Status.SERVING)
        if self.status is not Status.FAILED:
            self.status = Status.STOPPED
        self._fail_waiters(error)

    # --- serving --------------------------------------------------------------------------

    def check_serving(self) -> None:
        if self.status is Status.FAILED:
            raise ModelUnavailable("model", f"model {self.name!r} cannot serve: {self.failure}")
        if self.status is not Status.SERVING:
            raise ModelUnavailable("model", f"model {self.name!r} is {self.status.value}")

    async def put_pending(self, items: Sequence[PendingPrediction]) -> None:
        await self._pending.put(items)

    async def label(self, items: list[tuple[PredictionId, int]]) -> list[LabelAnswer]:
        """Append labels, then wait until this replica has applied the new ones."""
        outcomes = await self._appender.labels(items)
        answers = []
        for outcome in outcomes:
            applied = None
            if outcome.status == "appended" and outcome.seq is not None:
                applied = await self._until_applied(outcome.seq)
            elif outcome.status == "duplicate" and outcome.seq is not None:
                applied = self.runtime.recent.get(outcome.seq)
            answers.append(LabelAnswer(outcome, applied))
        return answers

    async def append_examples(self, items: list[tuple[Example, int]]) -> list[tuple[str, Applied | None]]:
        """Append labelled examples never scored; ``(prediction id, applied)`` for each."""
        result = await self._appender.examples(items)
        out = []
        for pid, entry in zip(result.prediction_ids, result.entries, strict=True):
            applied = await self._until_applied(entry.seq) if entry.seq is not None else None
            out.append((pid, applied))
        return out

    async def append_event(
        self, kind: str, body: bytes, request_id: str, expected_seq: int | None = None
    ) -> Applied | None:
        """Append a non-label event to the log (idempotent by ``request_id``: a retry finds the
        first entry), then wait until this replica has applied it. With ``expected_seq``, only as
        the entry after it (else the store's ``LogMoved``, nothing written)."""
        appended, _ = await self.store.append_event(
            self.name, self.generation, kind, body, request_id, time.time(), expected_seq
        )
        if appended.seq is None:
            return None
        return await self._until_applied(appended.seq)

    async def until_applied(self, seq: int) -> None:
        """Return once this replica has applied log entry ``seq`` (or a checkpoint past it)."""
        if seq > self.runtime.version:
            await self._until_applied(seq)

    async def checkpoint(self, timeout: float = 30.0) -> bool:
        """Have a checkpoint of at least the current version written; False when one is stored
        already (see :meth:`CheckpointWriter.checkpoint`)."""
        return await self.writer.checkpoint(timeout)

    def request_checkpoint(self) -> None:
        """Another replica asked for a checkpoint (through the control stream)."""
        self.writer.request()

    # --- applying the log -----------------------------------------------------------------

    async def _until_applied(self, seq: int) -> Applied | None:
        """The application of entry ``seq`` on this replica, once the follower got there."""
        runtime = self.runtime
        if seq <= runtime.version:
            return runtime.recent.get(seq)
        self.check_serving()
        future: asyncio.Future[Applied | None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(seq, []).append(future)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.settings.apply_timeout_seconds)
        except TimeoutError:
            raise StoreUnavailable(
                f"label entry {seq} of {self.name} was appended but not applied here within "
                f"{self.settings.apply_timeout_seconds:g} s; a retry answers its outcome",
                retry_after=1,
            ) from None

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
                    try:
                        self._apply(entries)
                    except LogGap as gap:
                        await self._resync(gap)
                    except LogRewound as rewound:
                        await self._rewind(rewound)
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
