"""The store in this process's memory: every role of :class:`~model_store.protocol.ModelStore`,
with the Redis store's answers, for the engine's unit tests (and experiments). Nothing survives
the process, and only engines of one process can share it: the service ships and runs on
:class:`~model_store.redis_store.RedisModelStore`, which the store tests check against Redis.

What the Lua scripts decide atomically is decided here between two awaits, which asyncio does not
interleave: a generation that is not current refuses an append (:class:`GenerationGone`), every
entry is numbered ``1, 2, 3, ...`` per generation, a labelled id answers ``duplicate`` or
``conflict`` for the done TTL, a checkpoint commit keeps the newest ``keep`` and trims the log
below the oldest one. Stream ids are ``"<n>-0"`` with ``n`` counting every append of the store.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .examples import Example
from .ids import PredictionId, make_prediction_id, parse_prediction_id, parse_stream_id
from .protocol import (
    NO_RETENTION,
    Appended,
    AppendResult,
    Checkpoint,
    ControlEvent,
    ControlOp,
    GenerationGone,
    LabelOutcome,
    LabelStatus,
    LogEntry,
    LogMoved,
    LogRetention,
    Manifest,
    ModelRecord,
    ModelStore,
    PendingLimitExceeded,
    PendingPrediction,
    StoreError,
    StoreIdentity,
)

LAYOUT = 2


@dataclass(slots=True)
class _Done:
    """The first outcome of a labelled id (or of an appended example or event), until ``until``."""

    stream_id: str
    seq: int
    y: int
    predicted_at: float
    labelled_at: float
    until: float


@dataclass(slots=True)
class _Generation:
    log: list[LogEntry] = field(default_factory=list)
    sequence: int = 0
    pending: dict[str, tuple[PendingPrediction, float]] = field(default_factory=dict)  # token -> (p, expiry)
    done: dict[str, _Done] = field(default_factory=dict)
    checkpoints: list[tuple[Manifest, bytes]] = field(default_factory=list)  # newest first
    lease: tuple[str, float] = ("", 0.0)  # holder, monotonic expiry


class MemoryModelStore:
    """See the module docstring. ``done_ttl_seconds`` is how long an appended example or event
    answers a retry with its first entry (labels use the TTL their call passes)."""

    def __init__(self, done_ttl_seconds: float = 86_400.0) -> None:
        self.done_ttl_seconds = done_ttl_seconds
        self._identity: StoreIdentity | None = None
        self._records: dict[str, ModelRecord] = {}
        self._counters: dict[str, int] = {}
        self._generations: dict[tuple[str, int], _Generation] = {}
        self._control: list[ControlEvent] = []
        self._appended = 0
        self._changed = asyncio.Condition()

    def wipe(self) -> None:
        """Lose every byte, as a Redis restarted without persistence does."""
        self.__init__(self.done_ttl_seconds)  # type: ignore[misc]

    # --- health ---------------------------------------------------------------------------

    async def ping(self) -> None:
        return None

    async def check_writable(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def check_durability(self) -> None:
        return None

    # --- identity -------------------------------------------------------------------------

    async def identity(self, create: bool) -> StoreIdentity | None:
        if create and self._identity is None:
            self._identity = StoreIdentity(secrets.token_hex(8), LAYOUT)
        return self._identity

    async def leftover_key(self) -> str | None:
        names = sorted({*self._records, *self._counters})
        return None if not names else f"acog:{{{names[0]}}}:gen"

    async def legacy_models(self) -> list[tuple[ModelRecord, int]]:
        return []

    async def adopt_model(self, record: ModelRecord, last_generation: int, seq: int) -> bool:
        return False

    async def finish_layout_migration(self) -> None:
        return None

    # --- model records and the control stream ---------------------------------------------

    async def put_model(
        self, name: str, config: dict[str, Any], created_at: float, expected_generation: int | None
    ) -> ModelRecord:
        current = self._records.get(name)
        now = 0 if current is None else current.generation
        if expected_generation is not None and expected_generation != now:
            raise GenerationGone(name, expected_generation, now or None)
        generation = self._counters.get(name, 0) + 1
        self._counters[name] = generation
        record = ModelRecord(name, generation, config, created_at)
        self._records[name] = record
        await self._announce("put", name, generation)
        return record

    async def put_model_from_state(
        self,
        name: str,
        config: dict[str, Any],
        created_at: float,
        expected_generation: int,
        blob: bytes,
        written_at: float,
    ) -> ModelRecord:
        current = self._records.get(name)
        now = 0 if current is None else current.generation
        if expected_generation != now:
            raise GenerationGone(name, expected_generation, now or None)
        generation = self._counters.get(name, 0) + 1
        self._counters[name] = generation
        self._generation(name, generation).checkpoints = [(Manifest("0-0", 0, written_at), bytes(blob))]
        record = ModelRecord(name, generation, config, created_at)
        self._records[name] = record
        await self._announce("put", name, generation)
        return record

    async def load_model(self, name: str) -> ModelRecord | None:
        return self._records.get(name)

    async def load_models(self) -> list[ModelRecord]:
        return [self._records[name] for name in sorted(self._records)]

    async def last_generation(self, name: str) -> int:
        return self._counters.get(name, 0)

    async def delete_model(self, name: str) -> int | None:
        record = self._records.pop(name, None)
        if record is not None:
            await self._announce("delete", name, record.generation)
        for generation in range(1, self._counters.get(name, 0) + 1):
            await self.delete_generation(name, generation)
        return None if record is None else record.generation

    async def delete_generation(self, name: str, generation: int) -> None:
        self._generations.pop((name, generation), None)

    async def control_position(self) -> str:
        return self._control[-1].event_id if self._control else "0-0"

    async def follow_control(self, after: str, block_seconds: float) -> list[ControlEvent]:
        def newer() -> list[ControlEvent]:
            return [e for e in self._control if _after(e.event_id, after)]

        return await self._wait(newer, block_seconds)

    async def request_checkpoint(self, name: str, generation: int) -> None:
        await self._announce("checkpoint", name, generation)

    # --- pending predictions --------------------------------------------------------------

    async def put_pending(
        self,
        model: str,
        generation: int,
        items: Sequence[PendingPrediction],
        ttl_seconds: float,
        max_pending: int | None = None,
    ) -> None:
        parsed = [parse_prediction_id(item.prediction_id) for item in items]
        for item, pid in zip(items, parsed, strict=True):
            if (pid.model, pid.generation) != (model, generation):
                raise ValueError(
                    f"prediction id {item.prediction_id} is not of {model} generation {generation}"
                )
        gen = self._generation(model, generation)
        now = time.time()
        if max_pending is not None:
            live = [t for t, (_, expiry) in gen.pending.items() if expiry >= now]
            new = {pid.token for pid in parsed} - set(live)
            if len(live) + len(new) > max_pending:
                raise PendingLimitExceeded(max_pending, len(live), len(items))
        for item, pid in zip(items, parsed, strict=True):
            gen.pending[pid.token] = (item, pid.predicted_at + ttl_seconds)

    async def count_pending(self, model: str, generation: int, now: float) -> int:
        gen = self._generation(model, generation)
        return sum(expiry >= now for _, expiry in gen.pending.values())

    async def sweep_expired(self, model: str, generation: int, now: float) -> int:
        gen = self._generation(model, generation)
        expired = [token for token, (_, expiry) in gen.pending.items() if expiry < now]
        for token in expired:
            del gen.pending[token]
        return len(expired)

    # --- the label log --------------------------------------------------------------------

    async def label(
        self,
        model: str,
        generation: int,
        items: Sequence[tuple[PredictionId, int]],
        labelled_at: float,
        done_ttl_seconds: float,
        label_window_seconds: float,
    ) -> list[LabelOutcome]:
        gen = self._current(model, generation)
        now = time.time()
        outcomes = []
        for pid, y in items:
            text = str(pid)
            done = self._done(gen, pid.token, now)
            pending = gen.pending.get(pid.token)
            if (pid.model, pid.generation) != (model, generation):
                outcomes.append(LabelOutcome(text, "unknown"))
            elif done is not None:
                status: LabelStatus = "duplicate" if done.y == y else "conflict"
                outcomes.append(
                    LabelOutcome(
                        text, status, done.stream_id, done.seq, done.predicted_at, done.labelled_at, done.y
                    )
                )
            elif pending is None or pending[1] < now or pending[0].prediction_id != text:
                expired = now > pid.predicted_at + label_window_seconds
                outcomes.append(LabelOutcome(text, "expired" if expired else "unknown"))
            else:
                p = pending[0]
                del gen.pending[pid.token]
                entry = self._append(gen, text, p.example, y, p.yhat, p.predicted_at, labelled_at)
                until = now + done_ttl_seconds
                gen.done[pid.token] = _Done(
                    entry.stream_id, entry.seq or 0, y, p.predicted_at, labelled_at, until
                )
                outcomes.append(
                    LabelOutcome(text, "appended", entry.stream_id, entry.seq, p.predicted_at, labelled_at, y)
                )
        await self._notify()
        return outcomes

    async def append_examples(
        self, model: str, generation: int, items: Sequence[tuple[Example, int]], labelled_at: float
    ) -> AppendResult:
        gen = self._current(model, generation)
        ids, entries = [], []
        for example, y in items:
            text = make_prediction_id(model, generation, labelled_at)
            entry = self._append(gen, text, example, y, 0, labelled_at, labelled_at)
            until = time.time() + self.done_ttl_seconds
            gen.done[parse_prediction_id(text).token] = _Done(
                entry.stream_id, entry.seq or 0, y, labelled_at, labelled_at, until
            )
            ids.append(text)
            entries.append(Appended(entry.stream_id, entry.seq))
        await self._notify()
        return AppendResult(ids, entries)

    async def append_event(
        self,
        model: str,
        generation: int,
        kind: str,
        body: bytes,
        request_id: str,
        at: float,
        expected_seq: int | None = None,
    ) -> tuple[Appended, bool]:
        if not kind or kind == "label" or not kind.isidentifier():
            raise ValueError(f"an event kind is an identifier other than 'label', got {kind!r}")
        gen = self._current(model, generation)
        key = f"event:{request_id}"
        done = self._done(gen, key, time.time())
        if done is not None:
            return Appended(done.stream_id, done.seq), False
        if expected_seq is not None and gen.sequence != expected_seq:
            raise LogMoved(model, generation, expected_seq, gen.sequence)
        self._appended += 1
        gen.sequence += 1
        entry = LogEntry(f"{self._appended}-0", gen.sequence, "", None, 0, 0, at, at, kind, bytes(body))
        gen.log.append(entry)
        gen.done[key] = _Done(entry.stream_id, gen.sequence, 0, at, at, time.time() + self.done_ttl_seconds)
        await self._notify()
        return Appended(entry.stream_id, entry.seq), True

    async def read_log(self, model: str, generation: int, after: str, count: int) -> list[LogEntry]:
        gen = self._generation(model, generation)
        return [e for e in gen.log if _after(e.stream_id, after)][:count]

    async def follow_log(
        self, model: str, generation: int, after: str, count: int, block_seconds: float
    ) -> list[LogEntry]:
        def newer() -> list[LogEntry]:
            gen = self._generations.get((model, generation))
            return [] if gen is None else [e for e in gen.log if _after(e.stream_id, after)][:count]

        return await self._wait(newer, block_seconds)

    # --- checkpoints ----------------------------------------------------------------------

    async def lease(self, model: str, generation: int, holder: str, ttl_seconds: float) -> str:
        gen = self._generation(model, generation)
        current, expiry = gen.lease
        if not current or expiry < time.monotonic() or current == holder:
            gen.lease = (holder, time.monotonic() + ttl_seconds)
            return holder
        return current

    async def release_lease(self, model: str, generation: int, holder: str) -> None:
        gen = self._generation(model, generation)
        if gen.lease[0] == holder:
            gen.lease = ("", 0.0)

    async def write_checkpoint(
        self,
        model: str,
        generation: int,
        blob: bytes,
        applied_id: str,
        seq: int,
        written_at: float,
        keep: int,
        holder: str,
        retain: LogRetention = NO_RETENTION,
    ) -> bool:
        if keep < 1:
            raise ValueError(f"keep at least one checkpoint, got keep={keep}")
        gen = self._generation(model, generation)
        where = f"checkpoint of {model} generation {generation} at entry {seq} ({applied_id})"
        if gen.checkpoints and not _after(applied_id, gen.checkpoints[0][0].applied_id):
            return False
        lease_holder, expiry = gen.lease
        if lease_holder != holder or expiry < time.monotonic():
            raise StoreError(f"{where}: the writer lease is held by {lease_holder!r}, not {holder!r}")
        if applied_id != "0-0":
            at = [e for e in gen.log if e.stream_id == applied_id]
            if not gen.log or _after(applied_id, gen.log[-1].stream_id):
                raise StoreError(f"{where}: the log ends past it; nothing was written")
            if not at or at[0].seq != seq:
                raise StoreError(f"{where}: the log entry there is not entry {seq}; nothing was written")
        gen.checkpoints.insert(0, (Manifest(applied_id, seq, written_at), bytes(blob)))
        del gen.checkpoints[keep:]
        oldest = gen.checkpoints[-1][0]
        if oldest.applied_id == "0-0":
            return True
        last = gen.log[-1].seq if gen.log else None
        if retain.entries and oldest.seq is not None and last is not None:
            gen.log = gen.log[-max(retain.entries, last - oldest.seq + 1) :]
        else:
            since = written_at - retain.seconds if retain.seconds else None
            gen.log = [
                e
                for e in gen.log
                if not _after(oldest.applied_id, e.stream_id)
                or (since is not None and e.labelled_at >= since)
            ]
        return True

    async def checkpoint_index(self, model: str, generation: int) -> list[Manifest]:
        return [manifest for manifest, _ in self._generation(model, generation).checkpoints]

    async def iter_checkpoints(self, model: str, generation: int) -> AsyncIterator[Checkpoint]:
        for manifest, blob in list(self._generation(model, generation).checkpoints):
            yield Checkpoint(manifest.applied_id, manifest.seq, blob)

    # --- inside ---------------------------------------------------------------------------

    def _generation(self, model: str, generation: int) -> _Generation:
        return self._generations.setdefault((model, generation), _Generation())

    def _current(self, model: str, generation: int) -> _Generation:
        record = self._records.get(model)
        if record is None or record.generation != generation:
            raise GenerationGone(model, generation, None if record is None else record.generation)
        return self._generation(model, generation)

    def _done(self, gen: _Generation, key: str, now: float) -> _Done | None:
        done = gen.done.get(key)
        return done if done is not None and done.until >= now else None

    def _append(
        self, gen: _Generation, pid: str, example: Example, y: int, yhat: int, tp: float, tl: float
    ) -> LogEntry:
        self._appended += 1
        gen.sequence += 1
        entry = LogEntry(f"{self._appended}-0", gen.sequence, pid, example, y, yhat, tp, tl)
        gen.log.append(entry)
        return entry

    async def _announce(self, op: ControlOp, name: str, generation: int) -> None:
        self._appended += 1
        self._control.append(ControlEvent(f"{self._appended}-0", op, name, generation))
        await self._notify()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _wait(self, newer: Any, block_seconds: float) -> Any:
        found = newer()
        if found or block_seconds <= 0:
            return found
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: bool(newer())), block_seconds)
            except TimeoutError:
                return []
        return newer()


def _after(a: str, b: str) -> bool:
    """Stream id ``a`` comes after ``b``."""
    return parse_stream_id(a) > parse_stream_id(b)


def _a_model_store(store: MemoryModelStore) -> ModelStore:
    """mypy checks here that the memory store has every role of :class:`ModelStore`."""
    return store
