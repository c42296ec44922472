"""The engine: one runtime per model, updates ordered by the label log (see engine.py)."""

from .engine import Engine, FeedbackResult, Observer, Prediction
from .errors import (
    EngineError,
    InvalidRequest,
    LimitExceeded,
    ModelGone,
    ModelUnavailable,
    UnknownModel,
    UnknownPrediction,
)
from .runtime import Applied, ModelRuntime

__all__ = [
    "Applied",
    "Engine",
    "EngineError",
    "FeedbackResult",
    "InvalidRequest",
    "LimitExceeded",
    "ModelGone",
    "ModelRuntime",
    "ModelUnavailable",
    "Observer",
    "Prediction",
    "UnknownModel",
    "UnknownPrediction",
]
