"""The store port the engine depends on: the ``ModelStore`` protocol (one protocol per role), its
records and errors.

Everything here is storage-neutral. :class:`~model_store.redis_store.RedisModelStore` is
the one implementation we ship; docs/store-contract.md says how it lays out Redis.

Times are float unix seconds. Stream ids are Redis stream ids ``"<ms>-<seq>"``; they
define the order in which the engine applies events (compare them with
:func:`model_store.ids.parse_stream_id`, never as strings). Every log entry also carries its
**sequence number** ``seq`` (1, 2, 3, ... per model generation, assigned by the append itself),
so a reader that misses an entry sees the gap.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from .examples import Example
from .ids import PredictionId

LabelStatus = Literal["appended", "duplicate", "conflict", "expired", "unknown"]
ControlOp = Literal["put", "delete", "checkpoint"]


class StoreError(Exception):
    """Base class of every error the store raises."""


class StoreUnavailable(StoreError):
    """The backing Redis cannot be reached or cannot serve right now (down, loading, read-only, out of
    memory, or too slow). The outcome of the call is unknown: a write may or may not have happened.
    Every write is idempotent, so retrying the same call is safe; retry after ``retry_after`` seconds
    (the API answers 503)."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class GenerationGone(StoreError):
    """An append to a generation that is no longer the model's current one; nothing was written.
    ``current`` is the current generation, or None when the model was deleted."""

    def __init__(self, model: str, generation: int, current: int | None) -> None:
        now = "deleted" if current is None else f"replaced by generation {current}"
        super().__init__(f"generation {generation} of model {model!r} is no longer current ({now})")
        self.model = model
        self.generation = generation
        self.current = current


class LogMoved(StoreError):
    """A compare-and-append (``append_event`` with ``expected_seq``) found the log past the entry the
    caller expected to be last; nothing was written. ``seq`` is the log's last entry now."""

    def __init__(self, model: str, generation: int, expected: int, seq: int) -> None:
        super().__init__(
            f"the log of {model!r} generation {generation} is at entry {seq}, not {expected}: not appended"
        )
        self.model = model
        self.generation = generation
        self.expected = expected
        self.seq = seq


class PendingLimitExceeded(StoreError):
    """Storing a batch of pending predictions would exceed ``limit`` live ones; nothing was stored."""

    def __init__(self, limit: int, live: int, requested: int) -> None:
        super().__init__(
            f"{live} pending predictions live + {requested} new would exceed the limit of {limit}"
        )
        self.limit = limit
        self.live = live
        self.requested = requested


@dataclass(frozen=True, slots=True)
class ModelRecord:
    """A model's configuration as the API accepted it; ``config`` must be JSON-serialisable."""

    name: str
    generation: int
    config: dict[str, Any] = field(hash=False)
    created_at: float


@dataclass(frozen=True, slots=True)
class PendingPrediction:
    """A prediction waiting for its label: the scored example, the answer given and when."""

    prediction_id: str
    example: Example
    yhat: int
    score: float
    predicted_at: float


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One self-contained event of the label log; replaying it needs nothing else.

    ``seq`` is its sequence number (None only for entries written before sequence numbers
    existed, layout 1). A *label* has ``kind == "label"``, ``yhat`` the label predicted before
    the label arrived (+1/-1), or 0 when the example was never scored (the engine then predicts
    at apply time, in log order). Any other ``kind`` is an event for the engine (a declared
    feature migration, say) whose ``body`` it interprets; its label fields are empty.
    """

    stream_id: str
    seq: int | None
    prediction_id: str
    example: Example | None
    y: int
    yhat: int
    predicted_at: float
    labelled_at: float
    kind: str = "label"
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class LabelOutcome:
    """What happened to one label of a batch.

    - ``appended``: a new event; ``stream_id``/``seq`` are its position in the log.
    - ``duplicate``: already labelled with the same value; ``stream_id``/``seq``, ``predicted_at``
      and ``labelled_at`` are those of the first label (a retry answers the first outcome).
    - ``conflict``: already labelled with *another* value (``first_y``); nothing appended.
    - ``expired``: no pending prediction, and the id is older than the label window.
    - ``unknown``: no pending prediction, and the id is not (or belongs elsewhere / is malformed).
    """

    prediction_id: str
    status: LabelStatus
    stream_id: str | None = None
    seq: int | None = None
    predicted_at: float | None = None
    labelled_at: float | None = None
    first_y: int | None = None


class Appended(NamedTuple):
    """Where an appended (or, on a retry, previously appended) entry sits in the log."""

    stream_id: str
    seq: int | None


class AppendResult(NamedTuple):
    """``append_examples``' answer: the server-made prediction ids and their entries, in order."""

    prediction_ids: list[str]
    entries: list[Appended]


class Manifest(NamedTuple):
    """A retained checkpoint as the index lists it: its position in the log and the time of its
    state (``seq`` and ``written_at`` are None for layout-1 checkpoints)."""

    applied_id: str
    seq: int | None
    written_at: float | None


@dataclass(frozen=True, slots=True)
class LogRetention:
    """How much of a log a checkpoint write keeps behind the oldest retained checkpoint (so that
    the history can be replayed): at least the newest ``entries`` entries, or every entry of the last
    ``seconds`` before the checkpoint's state time (one of the two; 0 and 0 keep nothing more)."""

    entries: int = 0
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.entries < 0 or not self.seconds >= 0.0:
            raise ValueError(f"log retention must be non-negative, got {self}")
        if self.entries and self.seconds:
            raise ValueError("log retention is by entries or by seconds, not both")


NO_RETENTION = LogRetention()


class Checkpoint(NamedTuple):
    """A stored checkpoint: the last stream id it has applied, its sequence number, and the
    engine's opaque blob."""

    applied_id: str
    seq: int | None
    blob: bytes


class ControlEvent(NamedTuple):
    """A model life-cycle event every replica follows: ``put`` (a new generation), ``delete``,
    or ``checkpoint`` (a request that the generation's lease holder write a checkpoint)."""

    event_id: str
    op: ControlOp
    model: str
    generation: int


class StoreIdentity(NamedTuple):
    """What the store says it is: a random ``epoch`` written when it was first used, and its key
    ``layout``. A store that comes back with another epoch (or none) lost its data."""

    epoch: str
    layout: int


class StoreHealth(Protocol):
    """Whether the store can serve, and its persistence settings."""

    async def ping(self) -> None:
        """Return if the store can serve; raise :class:`StoreUnavailable` otherwise."""
        ...

    async def check_writable(self) -> None:
        """Return if the store accepts writes now (not read-only, not out of memory); raise
        :class:`StoreUnavailable` saying why otherwise. Writes nothing lasting."""
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...

    async def check_durability(self) -> None:
        """Raise :class:`StoreError` when an opt-in durability setting cannot be honoured here."""
        ...


class IdentityStore(Protocol):
    """What the store is (its epoch and key layout), and the migration of an older layout."""

    async def identity(self, create: bool) -> StoreIdentity | None:
        """The store's identity; with ``create``, written first if the store has none.
        None when absent and not created."""
        ...

    async def leftover_key(self) -> str | None:
        """A key of this service's other than layout 1's, if the store holds any: in a store without
        an identity, what is left of lost data."""
        ...

    async def legacy_models(self) -> list[tuple[ModelRecord, int]]:
        """Models of the previous key layout (layout 1) not migrated yet, each with the last
        generation issued for its name."""
        ...

    async def adopt_model(self, record: ModelRecord, last_generation: int, seq: int) -> bool:
        """Migrate one layout-1 model whose log has reached entry ``seq``; False if done already."""
        ...

    async def finish_layout_migration(self) -> None:
        """Retire the layout-1 keys once every model is adopted."""
        ...


class ModelRegistry(Protocol):
    """The model records (one per model: its current generation and configuration), and the
    control stream that announces every change of them to every replica."""

    async def put_model(
        self, name: str, config: dict[str, Any], created_at: float, expected_generation: int | None
    ) -> ModelRecord:
        """Start a new generation of ``name`` with ``config`` and announce it on the control stream.

        ``expected_generation``: the generation the caller believes current (0 for "no model"),
        or None for any. When it differs, nothing changes and :class:`GenerationGone` is raised
        with the current one. Generations never repeat, even across delete and re-create.
        """
        ...

    async def put_model_from_state(
        self,
        name: str,
        config: dict[str, Any],
        created_at: float,
        expected_generation: int,
        blob: bytes,
        written_at: float,
    ) -> ModelRecord:
        """Start generation ``expected_generation + 1`` of ``name`` whose first checkpoint, at the
        empty log (entry 0, ``"0-0"``), is ``blob`` (taken at ``written_at``), record and checkpoint in
        one step, and announce it; :class:`GenerationGone`, changing nothing, when the current
        generation is not ``expected_generation``. What a rollback writes."""
        ...

    async def load_model(self, name: str) -> ModelRecord | None:
        """The current record of ``name``, or None when there is none."""
        ...

    async def load_models(self) -> list[ModelRecord]:
        """Every current model record, sorted by name."""
        ...

    async def last_generation(self, name: str) -> int:
        """The last generation ever issued for ``name`` (0 when none): a prediction of a generation up
        to this one existed, even if the model was deleted since."""
        ...

    async def delete_model(self, name: str) -> int | None:
        """Delete ``name``'s record, announce it, then drop the data of all its generations.
        Returns the deleted generation, or None when there was no model."""
        ...

    async def delete_generation(self, name: str, generation: int) -> None:
        """Drop a generation's label log, checkpoints, lease and pending index (other keys expire)."""
        ...

    async def control_position(self) -> str:
        """The id of the newest control event ("0-0" when none): follow from here."""
        ...

    async def follow_control(self, after: str, block_seconds: float) -> list[ControlEvent]:
        """Control events after ``after``, waiting up to ``block_seconds`` for one."""
        ...


class PendingStore(Protocol):
    """Predictions waiting for their label, each for its label window."""

    async def put_pending(
        self,
        model: str,
        generation: int,
        items: Sequence[PendingPrediction],
        ttl_seconds: float,
        max_pending: int | None = None,
    ) -> None:
        """Store pending predictions until ``prediction time + ttl_seconds`` (the label window).

        Raises :class:`PendingLimitExceeded`, storing nothing, when more than ``max_pending``
        would be live.
        """
        ...

    async def count_pending(self, model: str, generation: int, now: float) -> int:
        """How many pending predictions are live (not labelled, not expired) at ``now``."""
        ...

    async def sweep_expired(self, model: str, generation: int, now: float) -> int:
        """Forget pending predictions expired before ``now``; returns how many (never labelled ones)."""
        ...


class LabelLog(Protocol):
    """Each model generation's label log: labels, examples and events appended in order, read back
    in that order."""

    async def label(
        self,
        model: str,
        generation: int,
        items: Sequence[tuple[PredictionId, int]],
        labelled_at: float,
        done_ttl_seconds: float,
        label_window_seconds: float,
    ) -> list[LabelOutcome]:
        """Resolve ``(prediction_id, y)`` labels (y is +1/-1) and append their events, atomically.

        Raises :class:`GenerationGone` (nothing written) when ``generation`` is not the model's
        current one. ``label_window_seconds`` must be the ``ttl_seconds`` the predictions were
        stored with: an id without a pending prediction is ``expired`` when it is older than
        that, else ``unknown``. ``done_ttl_seconds`` is how long a labelled id answers
        ``duplicate`` or ``conflict``; make it at least the window.
        """
        ...

    async def append_examples(
        self,
        model: str,
        generation: int,
        items: Sequence[tuple[Example, int]],
        labelled_at: float,
    ) -> AppendResult:
        """Append events for labelled examples that were never predicted (``yhat`` 0)."""
        ...

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
        """Append a non-label event (``kind``, opaque ``body``), idempotent by ``request_id``
        (a retry returns the first entry). Returns the entry and whether it is new.

        With ``expected_seq`` it is a compare-and-append: written only as entry ``expected_seq + 1``
        (the log's last entry is still ``expected_seq``), else :class:`LogMoved`, writing nothing
        (a retry of one that was written still returns it)."""
        ...

    async def read_log(self, model: str, generation: int, after: str, count: int) -> list[LogEntry]:
        """Up to ``count`` log entries after ``after`` (exclusive), in stream order."""
        ...

    async def follow_log(
        self, model: str, generation: int, after: str, count: int, block_seconds: float
    ) -> list[LogEntry]:
        """Like :meth:`read_log`, but waits up to ``block_seconds`` for an entry when there is none
        (it may come back empty sooner: the Redis store waits at most half its socket timeout)."""
        ...


class CheckpointStore(Protocol):
    """Each model generation's checkpoints, and the lease of the one replica that writes them."""

    async def request_checkpoint(self, name: str, generation: int) -> None:
        """Ask the lease holder of the generation (whichever replica) to write a checkpoint."""
        ...

    async def lease(self, model: str, generation: int, holder: str, ttl_seconds: float) -> str:
        """Take or renew the generation's checkpoint-writer lease for ``holder``; returns who holds
        it now ('' when nobody)."""
        ...

    async def release_lease(self, model: str, generation: int, holder: str) -> None:
        """Give the lease up if ``holder`` holds it."""
        ...

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
        """Store a checkpoint of the state after entry ``seq`` (stream id ``applied_id``), taken at
        ``written_at``; keep
        the newest ``keep``, and trim the log below the oldest retained one, except what ``retain``
        keeps further back.

        Returns False, changing nothing, when a checkpoint at or after ``applied_id`` is already
        stored (a retry, or another writer got further). Raises :class:`StoreError`, changing
        nothing, when ``holder`` does not hold the writer lease, when the log entry at
        ``applied_id`` does not carry ``seq`` (the state would not be the prefix it claims), or
        when ``applied_id`` is past the log's end.
        """
        ...

    async def checkpoint_index(self, model: str, generation: int) -> list[Manifest]:
        """Retained checkpoints, newest first."""
        ...

    def iter_checkpoints(self, model: str, generation: int) -> AsyncIterator[Checkpoint]:
        """Retained checkpoints, newest first, each blob fetched only when the iteration reaches it.

        Never one whose write has not completed. One that a concurrent commit replaced while it
        was being read is skipped for the newer one that replaced it. A checkpoint the store finds
        damaged (e.g. part of its blob missing) comes with an empty blob, which the state codec
        refuses.
        """
        ...


class ReplicaStore(LabelLog, PendingStore, CheckpointStore, Protocol):
    """What one model replica uses: its log, its pending predictions and its checkpoints."""

    ...


class ModelStore(
    StoreHealth, IdentityStore, ModelRegistry, PendingStore, LabelLog, CheckpointStore, Protocol
):
    """Persistence for models, pending predictions, label logs and checkpoints.

    Every method may raise :class:`StoreUnavailable`, after which the outcome is unknown. Calls
    that change several things (``put_pending``, ``label``, ``append_examples``,
    ``append_event``, ``write_checkpoint``) are atomic and safe to retry: either all of it
    happened or none of it did, and a retry after an unanswered call does not apply anything
    twice (it answers the first call's outcome).

    The roles are separate protocols (:class:`StoreHealth`, :class:`IdentityStore`, :class:`ModelRegistry`,
    :class:`PendingStore`, :class:`LabelLog`, :class:`CheckpointStore`), so that each part of
    the engine names the one it uses.
    """
