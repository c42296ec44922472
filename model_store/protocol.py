"""The store port the engine depends on: the ``ModelStore`` protocol, its records and errors.

Everything here is storage-neutral. :class:`~model_store.redis_store.RedisModelStore` is
the one implementation we ship; docs/store-contract.md says how it lays out Redis.

Times are float unix seconds. Stream ids are Redis stream ids ``"<ms>-<seq>"``; they
define the order in which the engine applies events (compare them with
:func:`model_store.ids.parse_stream_id`, never as strings).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from .examples import Example

LabelStatus = Literal["appended", "duplicate", "expired", "unknown"]


class StoreError(Exception):
    """Base class of every error the store raises."""


class StoreUnavailable(StoreError):
    """The backing Redis cannot be reached or cannot serve right now (down, loading, read-only, out of
    memory). Nothing was half-applied; retry after ``retry_after`` seconds (the API answers 503)."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


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

    ``yhat`` is the label predicted before the label arrived (+1/-1), or 0 when the example
    was never scored (the engine then predicts at apply time, in log order).
    """

    stream_id: str
    prediction_id: str
    example: Example
    y: int
    yhat: int
    predicted_at: float
    labelled_at: float


@dataclass(frozen=True, slots=True)
class LabelOutcome:
    """What happened to one label of a batch.

    - ``appended``: a new event, ``stream_id`` is its log id, ``predicted_at`` the prediction time.
    - ``duplicate``: already labelled; ``stream_id`` is the id of the event appended back then.
    - ``expired``: no pending prediction, and the id is older than the label window.
    - ``unknown``: no pending prediction, and the id is not (or belongs elsewhere / is malformed).
    """

    prediction_id: str
    status: LabelStatus
    stream_id: str | None = None
    predicted_at: float | None = None


class LabelResult(NamedTuple):
    """``label``'s answer: one outcome per item, in order, and the log backlog to apply."""

    outcomes: list[LabelOutcome]
    backlog: list[LogEntry]


class AppendResult(NamedTuple):
    """``append_examples``' answer: the server-made prediction ids, in order, and the backlog."""

    prediction_ids: list[str]
    backlog: list[LogEntry]


class LogInfo(NamedTuple):
    """Length and first/last entry ids of a label log (ids are None when it is empty)."""

    length: int
    first_id: str | None
    last_id: str | None


class Checkpoint(NamedTuple):
    """A stored checkpoint: the last stream id it has applied, and the engine's opaque blob."""

    applied_id: str
    blob: bytes


class ModelStore(Protocol):
    """Persistence for models, pending predictions, label logs and checkpoints.

    Every method may raise :class:`StoreUnavailable`. Calls that change several things
    (``put_pending``, ``label``, ``append_examples``, ``write_checkpoint``) are atomic and
    safe to retry: either all of it happened or none of it did, and a retry after an
    unanswered call does not apply anything twice.
    """

    async def ping(self) -> None:
        """Return if the store can serve; raise :class:`StoreUnavailable` otherwise."""
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...

    async def next_generation(self, name: str) -> int:
        """A new generation number for ``name``; never repeats, even across delete and re-create."""
        ...

    async def save_model(self, record: ModelRecord) -> None:
        """Store (or replace) the record of ``record.name``."""
        ...

    async def load_models(self) -> list[ModelRecord]:
        """Every stored model record, sorted by name."""
        ...

    async def delete_generation(self, name: str, generation: int) -> None:
        """Drop a generation's label log, checkpoints and pending index (other keys expire)."""
        ...

    async def delete_model(self, name: str) -> None:
        """Drop a model's record and the data of all its generations (the generation counter stays)."""
        ...

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

    async def get_pending(self, prediction_id: str) -> PendingPrediction | None:
        """The pending prediction under ``prediction_id``, or None (labelled, expired or unknown)."""
        ...

    async def count_pending(self, model: str, generation: int, now: float) -> int:
        """How many pending predictions are live (not labelled, not expired) at ``now``."""
        ...

    async def sweep_expired(self, model: str, generation: int, now: float) -> int:
        """Forget pending predictions expired before ``now``; returns how many (never labelled ones)."""
        ...

    async def label(
        self,
        model: str,
        generation: int,
        items: Sequence[tuple[str, int]],
        labelled_at: float,
        applied_up_to: str,
        done_ttl_seconds: float,
        label_window_seconds: float,
    ) -> LabelResult:
        """Resolve ``(prediction_id, y)`` labels (y is +1/-1) and append their events, atomically.

        Returns one outcome per item and every log entry after ``applied_up_to`` (exclusive)
        up to the newest, the caller's own events and other writers' included, in stream
        order. ``label_window_seconds`` must be the ``ttl_seconds`` the predictions were
        stored with: an id without a pending prediction is ``expired`` when it is older than
        that, else ``unknown``. ``done_ttl_seconds`` is how long a labelled id answers
        ``duplicate``; make it at least the window.
        """
        ...

    async def append_examples(
        self,
        model: str,
        generation: int,
        items: Sequence[tuple[Example, int]],
        labelled_at: float,
        applied_up_to: str,
    ) -> AppendResult:
        """Append events for labelled examples that were never predicted (``yhat`` 0)."""
        ...

    async def read_log(self, model: str, generation: int, after: str, count: int) -> list[LogEntry]:
        """Up to ``count`` log entries after ``after`` (exclusive), in stream order."""
        ...

    async def log_info(self, model: str, generation: int) -> LogInfo:
        """Length and first/last ids of the label log."""
        ...

    async def write_checkpoint(
        self, model: str, generation: int, blob: bytes, applied_id: str, keep: int
    ) -> bool:
        """Store a checkpoint covering the log up to ``applied_id`` (inclusive), keep the newest
        ``keep`` and trim the log below the oldest retained one's applied id.

        Returns False, changing nothing, when a checkpoint at or after ``applied_id`` is
        already stored (a replica got further, or this is a retry): retained checkpoints
        always have strictly decreasing applied ids, so none is ever left without the log
        it needs. An ``applied_id`` past the end of the log is a :class:`StoreError`.
        """
        ...

    async def load_checkpoints(self, model: str, generation: int) -> list[Checkpoint]:
        """Retained checkpoints, newest (largest applied id) first.

        Never one whose write has not completed. A checkpoint the store finds damaged (e.g.
        part of its blob missing) is listed with an empty blob, which the state codec refuses.
        """
        ...

    def iter_checkpoints(self, model: str, generation: int) -> AsyncIterator[Checkpoint]:
        """What :meth:`load_checkpoints` lists, in the same order, each blob fetched only when the
        iteration reaches it (stop early to fetch no older one)."""
        ...
