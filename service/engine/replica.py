"""One model generation on this process: a replica of its label log.

Every serving process holds each model as a replica: the same entries, applied in the same
order, give the same bits (see :mod:`service.engine.runtime`). A :class:`ModelReplica` owns

- the **runtime** (learner, measures, registry, position in the log);
- the **follower**, the one task that changes the runtime: it tails the log with a blocking
  read, applies every entry in sequence, whichever replica appended it, so predictions here
  reflect labels acknowledged anywhere a few milliseconds earlier. An entry that is not
  ``version + 1`` is a gap (the log was trimmed past this replica's position): the follower
  reloads the newest checkpoint and replays from there, and never skips an entry (recovery and
  the follower are :class:`service.engine.follower.LogFollower`, this class's base);
- the **appender** (group commit of labels) and the **pending writer** (group commit of
  predictions); a label request appends, then waits until the follower has applied its entry,
  so the reply carries the version that includes it;
- the **checkpoint writer** (:mod:`service.engine.checkpoint_writer`): one replica at a time (the
  lease holder) writes the generation's checkpoints; the follower keeps its lease between reads.

This module is the append path: labels, labelled examples, events and pending predictions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from model_store import Example, LabelOutcome, PendingPrediction, PredictionId, ReplicaStore

from ..model_config import ModelConfig
from .appender import Appender, AppendSettings
from .cancellation import finish
from .checkpoint_writer import CheckpointWriter, WriterSettings
from .follower import LogFollower, ReplicaSettings, Status
from .observer import Observer
from .pending import PendingWriter
from .runtime import Applied, ModelRuntime

__all__ = ["LabelAnswer", "ModelReplica", "ReplicaSettings", "Status"]


@dataclass(frozen=True, slots=True)
class LabelAnswer:
    """A label's outcome on this replica: the store's outcome, and what applying it did (None when
    it was not applied here: a duplicate older than this replica's memory, or not appended)."""

    outcome: LabelOutcome
    applied: Applied | None


class ModelReplica(LogFollower):
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

    async def put_pending(self, items: Sequence[PendingPrediction]) -> None:
        await self._pending.put(items)

    def submit_pending(self, items: Sequence[PendingPrediction]) -> asyncio.Future[None]:
        """Queue pending predictions for the group commit; the future is done once they are stored."""
        return self._pending.submit(items)

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
