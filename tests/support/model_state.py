"""What two equally-fed models must have in common, as the API shows it."""

from __future__ import annotations

from typing import Any

from service.client import Prediction

VOLATILE = ("applied_id", "checkpoint")
"""Parts of a model's ``state`` that legitimately differ between two models fed the same
stream: the log's stream ids (wall-clock based) and when a checkpoint was last written."""


def comparable(state: Any) -> Any:
    """A model's ``state`` without the parts that differ between two equally-fed models."""
    return {k: v for k, v in state.items() if k not in VOLATILE}


def answer(prediction: Prediction) -> tuple[int, float, int]:
    """What two equally-fed models must answer alike for one prediction (ids differ)."""
    return prediction.label, prediction.score, prediction.model_version
