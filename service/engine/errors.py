"""What the engine refuses, in domain terms; the API maps each to an HTTP status."""

from __future__ import annotations


class EngineError(Exception):
    """Base class. ``field`` names the part of the request at fault, ``problem`` says why."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class UnknownModel(EngineError):
    """No model of that name (404)."""


class ModelGone(EngineError):
    """The prediction belongs to a generation that was replaced or deleted (410)."""


class UnknownPrediction(EngineError):
    """No pending prediction under that id: ``reason`` is ``"expired"`` or ``"unknown"`` (404)."""

    def __init__(self, field: str, problem: str, reason: str) -> None:
        super().__init__(field, problem)
        self.reason = reason


class InvalidRequest(EngineError):
    """The request is well-formed JSON but not acceptable for this model (422)."""


class LimitExceeded(EngineError):
    """A configured limit would be passed (413 for sizes, 422 otherwise)."""

    def __init__(self, field: str, problem: str, status: int = 422) -> None:
        super().__init__(field, problem)
        self.status = status


class ModelUnavailable(EngineError):
    """The model exists but cannot serve now: still recovering, or its state could not be
    recovered (503)."""
