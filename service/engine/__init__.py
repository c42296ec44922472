"""The engine: this process's replica of every model, updates ordered by each model's label log."""

from .engine import Engine, FeedbackResult, Prediction, PutOutcome
from .errors import (
    EngineError,
    InvalidRequest,
    LabelConflict,
    LimitExceeded,
    ModelConflict,
    ModelGone,
    ModelUnavailable,
    StoreFailure,
    StoreLost,
    UnknownModel,
    UnknownPrediction,
    store_failure,
)
from .observer import Observer
from .runtime import Applied, ModelRuntime
from .view import MeasuresView, ModelView

__all__ = [
    "Applied",
    "Engine",
    "EngineError",
    "FeedbackResult",
    "InvalidRequest",
    "LabelConflict",
    "LimitExceeded",
    "MeasuresView",
    "ModelConflict",
    "ModelGone",
    "ModelRuntime",
    "ModelUnavailable",
    "ModelView",
    "Observer",
    "Prediction",
    "PutOutcome",
    "StoreFailure",
    "StoreLost",
    "UnknownModel",
    "UnknownPrediction",
    "store_failure",
]
