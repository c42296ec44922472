"""The engine: this process's replica of every model, updates ordered by each model's label log."""

from .changes import PutOutcome
from .engine import Engine
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
    TooLarge,
    UnknownModel,
    UnknownPrediction,
    store_failure,
)
from .labels import FeedbackResult, LabelItem
from .observer import Observer
from .predictor import Prediction, Scored
from .runtime import Applied, ModelRuntime
from .view import MeasuresView, ModelView

__all__ = [
    "Applied",
    "Engine",
    "EngineError",
    "FeedbackResult",
    "InvalidRequest",
    "LabelConflict",
    "LabelItem",
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
    "Scored",
    "StoreFailure",
    "StoreLost",
    "TooLarge",
    "UnknownModel",
    "UnknownPrediction",
    "store_failure",
]
