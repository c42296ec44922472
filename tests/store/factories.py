"""Small builders shared by the store tests."""

from __future__ import annotations

import time

import numpy as np

from model_store import Example, PendingPrediction, make_prediction_id


def example(seed: int) -> Example:
    """A small sparse example whose values depend on ``seed``."""
    rng = np.random.default_rng(seed)
    indices = np.sort(rng.choice(1000, size=5, replace=False)).astype(np.int64)
    return Example(rng.standard_normal(5), indices=indices)


def pending(model: str, generation: int, seed: int = 0, at: float | None = None) -> PendingPrediction:
    """A pending prediction made at ``at`` (default: now)."""
    predicted_at = time.time() if at is None else at
    return PendingPrediction(
        prediction_id=make_prediction_id(model, generation, predicted_at),
        example=example(seed),
        yhat=1 if seed % 2 else -1,
        score=float(seed) - 0.5,
        predicted_at=predicted_at,
    )
