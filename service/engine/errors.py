"""What the engine refuses, in domain terms: the part of the request at fault, the problem, a
``kind`` (the ``type`` of the error detail clients read, and the reason a refused label is counted
under in ``acog_labels_rejected_total``) and the retry advice.

The engine knows nothing of HTTP: the API layer maps each error type to a status
(:data:`service.api.errors.STATUS`), and REST and the WebSocket both answer from that table. A
failure of the store is answered through :func:`store_failure`, which gives it the same attributes.
"""

from __future__ import annotations

import math

from model_store import StoreError, StoreUnavailable


class EngineError(Exception):
    """Base class. ``field`` names the part of the request at fault, ``problem`` says why."""

    kind: str = "error"
    retry_after: float | None = None
    """Seconds after which the same request may succeed (sent as ``Retry-After``); None: do not retry."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    @property
    def retry_after_seconds(self) -> int | None:
        """:attr:`retry_after` as protocols send it: whole seconds, at least 1 (``Retry-After``
        is an integer, and 0 would invite a retry storm); None when the request is final."""
        return None if self.retry_after is None else max(1, math.ceil(self.retry_after))

    @property
    def reason(self) -> str:
        """The reason a refused label is counted under (``acog_labels_rejected_total``)."""
        return self.kind


class UnknownModel(EngineError):
    """No model of that name."""

    kind = "unknown_model"


class ModelGone(EngineError):
    """The prediction belongs to a generation that was replaced or deleted."""

    kind = "model_gone"


class UnknownPrediction(EngineError):
    """No pending prediction under that id: ``kind`` is ``"expired"`` or ``"unknown"``."""

    def __init__(self, field: str, problem: str, reason: str) -> None:
        super().__init__(field, problem)
        self.kind = reason


class InvalidRequest(EngineError):
    """The request is well-formed JSON but not acceptable for this model."""

    kind = "invalid"


class LimitExceeded(EngineError):
    """A configured limit would be passed."""

    kind = "limit_exceeded"


class TooLarge(LimitExceeded):
    """A request larger than a configured size: more items in a batch than ``max_batch``."""


class LabelConflict(EngineError):
    """A prediction id labelled again with a *different* value: a label cannot change.
    Retrying does not help, so clients must not."""

    kind = "label_conflict"


class ModelConflict(EngineError):
    """A model change that would silently undo another one: a PUT with another configuration
    without ``replace``, or a model changed meanwhile by another request."""

    kind = "model_conflict"


class ModelUnavailable(EngineError):
    """The model exists but cannot serve now: still recovering, stopped, or its state could not be
    recovered."""

    kind = "model_unavailable"
    retry_after = 5.0


class StoreLost(EngineError):
    """The store is not the one this process started on: it lost its data (it stays so until an
    operator acts: restores the data, or restarts the service; a retry helps only after)."""

    kind = "store_lost"
    retry_after = 30.0  # an operator must act (restore the data, or restart): retry much later


class StoreFailure(EngineError):
    """The store failed to answer: the outcome is unknown. The store may or may not have done
    what was asked (a label may have been appended before the connection broke, say), and every
    store write is one atomic, idempotent script, so retrying the same request is safe: a label
    retried with the same prediction id and value answers the first one's outcome."""


def store_failure(error: StoreError) -> StoreFailure:
    """``error`` as the engine answers it: ``store_unavailable`` with the store's own retry advice,
    or ``store_error`` (retry after 1 s) for any other store failure."""
    failure = StoreFailure(
        "store",
        f"the model store is unavailable ({error}); the outcome is unknown: retry the same request, "
        "which is safe",
    )
    if isinstance(error, StoreUnavailable):
        failure.kind, failure.retry_after = "store_unavailable", error.retry_after
    else:
        failure.kind, failure.retry_after = "store_error", 1.0
    return failure
