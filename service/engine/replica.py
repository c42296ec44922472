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
- the **checkpoint-writer lease**: one replica at a time (the lease holder) writes the
  generation's checkpoints, every N entries, every T seconds, on request and at shutdown; when
  it dies its lease lapses and another replica takes over. Encoding a checkpoint pauses the
  follower (the state must not move under it); sending it to Redis does not.
"""

from __future__ import annotations

import asyncio
import contextlib
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
    ModelStore,
    PendingPrediction,
    StoreError,
    StoreUnavailable,
)

from ..model_config import ModelConfig
from .appender import Appender, AppendSettings
from .cancellation import finish, reraise_cancellation
from .checkpoint import CheckpointMismatch, Snapshot
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
        store: ModelStore,
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
        self.lease_holder = ""
        self.resyncs = 0
        self._appender = Appender(
            store, name, generation, AppendSettings(settings.label_window_seconds, settings.done_ttl_seconds)
        )
        self._pending = PendingWriter(
            store, name, generation, settings.label_window_seconds, settings.max_pending
        )
        self._follower: asyncio.Task[None] | None = None
        self._upload: asyncio.Task[None] | None = None
        self._waiters: dict[int, list[asyncio.Future[Applied | None]]] = {}
        self._checkpoint_waiters: list[tuple[int, asyncio.Future[bool]]] = []
        self._checkpoint_requested = False
        self._lease_due = 0.0
        self._stored_seq = 0  # the newest committed checkpoint's sequence number, as last read
        self._stopping = False
        self._state = asyncio.Lock()
        """Held while the runtime changes (the follower applies) or is encoded (a checkpoint)."""

    # --- life cycle -----------------------------------------------------------------------

    @property
    def is_writer(self) -> bool:
        return self.lease_holder == self.settings.replica_id

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
        if self._upload is not None:
            with contextlib.suppress(Exception):
                await self._upload
        if (
            checkpoint
            and self.is_writer
            and self.status is Status.SERVING
            and self.runtime.version > self._stored_seq
        ):
            try:
                await self._write(*await self._encode())
            except Exception as exc:
                log.warning(
                    "model %s: no checkpoint at shutdown (%s); the log replays on start", self.name, exc
                )
        if self.is_writer:
            with contextlib.suppress(StoreError):
                await self.store.release_lease(self.name, self.generation, self.settings.replica_id)
            self.lease_holder = ""
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

    async def label(self, items: list[tuple[str, int]]) -> list[LabelAnswer]:
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

    async def append_event(self, kind: str, body: bytes, request_id: str) -> Applied | None:
        """Append a non-label event to the log (idempotent by ``request_id``: a retry finds the
        first entry), then wait until this replica has applied it."""
        appended, _ = await self.store.append_event(
            self.name, self.generation, kind, body, request_id, time.time()
        )
        if appended.seq is None:
            return None
        return await self._until_applied(appended.seq)

    async def checkpoint(self, timeout: float = 30.0) -> bool:
        """Have a checkpoint of at least the current version written; False when one is stored already.

        The lease holder writes it: this replica, if it holds the lease or can take it (then any
        store error is raised to the caller); else the holder, asked through the control stream,
        which this waits for up to ``timeout`` seconds.
        """
        target = self.runtime.version
        await self._refresh_checkpoints()
        if target <= self._stored_seq:
            return False
        self.lease_holder = await self.store.lease(
            self.name, self.generation, self.settings.replica_id, self.settings.lease_seconds
        )
        if self.is_writer:
            if self._upload is not None and not self._upload.done():
                with contextlib.suppress(Exception):
                    await self._upload
            if self.runtime.version <= self._stored_seq:
                return False
            await self._write(*await self._encode())
            return True
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._checkpoint_waiters.append((target, future))
        await self.store.request_checkpoint(self.name, self.generation)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            raise StoreUnavailable(
                f"the checkpoint writer of {self.name} ({self.lease_holder}) wrote no checkpoint of version "
                f"{target} within {timeout:g} s",
                retry_after=5,
            ) from None

    def request_checkpoint(self) -> None:
        """Another replica asked for a checkpoint (through the control stream)."""
        self._checkpoint_requested = True

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
                await self._housekeeping()
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

    # --- the lease and checkpoints --------------------------------------------------------

    async def _housekeeping(self) -> None:
        now = time.monotonic()
        if now >= self._lease_due or (self._checkpoint_waiters and not self.is_writer):
            self.lease_holder = await self.store.lease(
                self.name, self.generation, self.settings.replica_id, self.settings.lease_seconds
            )
            self._lease_due = now + self.settings.lease_seconds / 3
            await self._refresh_checkpoints()
        if self.is_writer and (self._upload is None or self._upload.done()) and self._checkpoint_due():
            self._checkpoint_requested = False
            blob, snapshot = await self._encode()  # the follower is here, so nothing is applied meanwhile
            self._upload = asyncio.create_task(
                self._write_logged(blob, snapshot), name=f"checkpoint:{self.name}"
            )

    def _checkpoint_due(self) -> bool:
        runtime = self.runtime
        if runtime.version <= self._stored_seq:
            self._checkpoint_requested = False
            return False
        if self._checkpoint_requested:
            return True
        if runtime.version - self._stored_seq >= self.settings.checkpoint_every_events:
            return True
        since = runtime.checkpointed_at if runtime.checkpointed_at is not None else runtime.created_at
        return time.time() - since >= self.settings.checkpoint_every_seconds

    async def _refresh_checkpoints(self) -> None:
        """Read the newest committed checkpoint's position (written by any replica)."""
        index = await self.store.checkpoint_index(self.name, self.generation)
        if index:
            newest = index[0]
            self._stored_seq = max(self._stored_seq, newest.seq or 0)
            if newest.written_at is not None:
                self.runtime.checkpointed_at = newest.written_at
            self.runtime.checkpointed_version = self._stored_seq
        self._resolve_checkpoint_waiters()

    def _resolve_checkpoint_waiters(self) -> None:
        keep = []
        for target, future in self._checkpoint_waiters:
            if self._stored_seq >= target:
                if not future.done():
                    future.set_result(True)
            else:
                keep.append((target, future))
        self._checkpoint_waiters = keep

    async def _encode(self) -> tuple[bytes, Snapshot]:
        # Nothing changes the runtime while the state lock is held, and the borrowed snapshot makes
        # sure of it (an update raises while its read-only views of the live arrays are out), so no
        # copy is made; encoding (memcpy and SHA-256, which release the GIL) runs in a thread:
        # predictions go on being served.
        async with self._state:
            with self.runtime.borrowed_snapshot() as snapshot:
                blob = await asyncio.to_thread(snapshot.encode)
        return blob, snapshot

    async def _write_logged(self, blob: bytes, snapshot: Snapshot) -> None:
        try:
            await self._write(blob, snapshot)
        except Exception as exc:  # retried when next due; a lost lease shows at the next renewal
            log.warning(
                "model %s: checkpoint at version %d not written: %s", self.name, snapshot.version, exc
            )

    async def _write(self, blob: bytes, snapshot: Snapshot) -> None:
        log.info("model %s: writing checkpoint at version %d", self.name, snapshot.version)
        if self.settings.fault_delay_seconds:
            await asyncio.sleep(self.settings.fault_delay_seconds)
        start = time.perf_counter()
        await self.store.write_checkpoint(
            self.name,
            self.generation,
            blob,
            snapshot.applied_id,
            snapshot.version,
            snapshot.written_at,
            self.settings.checkpoints_kept,
            self.settings.replica_id,
            self.settings.log_retention,
        )
        self.observer.checkpointed(self.name, time.perf_counter() - start, len(blob))
        self._stored_seq = max(self._stored_seq, snapshot.version)
        self.runtime.checkpointed_version = self._stored_seq
        self.runtime.checkpointed_at = snapshot.written_at
        log.info("model %s: checkpoint at version %d written", self.name, snapshot.version)
        self._resolve_checkpoint_waiters()

    # --- failure --------------------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        self.status = Status.FAILED
        self.failure = reason
        log.error("model %s (generation %d) failed: %s", self.name, self.generation, reason)
        self._fail_waiters(ModelUnavailable("model", f"model {self.name!r} stopped: {reason}"))

    def _fail_waiters(self, error: Exception) -> None:
        waiting: list[asyncio.Future[Any]] = [f for futures in self._waiters.values() for f in futures]
        waiting += [future for _, future in self._checkpoint_waiters]
        self._waiters.clear()
        self._checkpoint_waiters = []
        for future in waiting:
            if not future.done():
                future.set_exception(error)


class _Fatal(Exception):
    """The replica cannot go on (the learner failed on a logged entry, the log cannot be recovered)."""
