"""What two equally-fed models must have in common, as the API shows it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from service.client import ApiError, Client, Prediction
from service.learners.inputs import canonical
from service.model_config import ModelConfig
from service.normalization import unit_l2

VOLATILE = ("applied_id", "checkpoint")
"""Parts of a model's ``state`` that legitimately differ between two models fed the same
stream: the log's stream ids (wall-clock based) and when a checkpoint was last written."""


def comparable(state: Any) -> Any:
    """A model's ``state`` without the parts that differ between two equally-fed models."""
    return {k: v for k, v in state.items() if k not in VOLATILE}


def answer(prediction: Prediction) -> tuple[int, float, int]:
    """What two equally-fed models must answer alike for one prediction (ids differ)."""
    return prediction.label, prediction.score, prediction.model_version


def state(client: Client, model: str) -> Any:
    """The model's learned ``state`` (``GET /models/{name}``)."""
    info = client.get_model(model)
    assert info.state is not None, info
    return info.state


def learn(client: Client, model: str, rows: Sequence[Any], labels: Sequence[int]) -> None:
    """Predict then label ``rows`` in order, so that a model has something to score with."""
    predictions = client.predict_batch(rows, model=model)
    results = client.feedback_batch(list(zip(predictions, [int(y) for y in labels], strict=True)))
    assert all(r.applied for r in results), results


def scores(client: Client, model: str, probe: Sequence[Any], step: int = 100) -> list[float]:
    """The probe rows' scores, ``step`` rows per request."""
    chunks = (client.predict_batch(probe[i : i + step], model=model) for i in range(0, len(probe), step))
    return [p.score for chunk in chunks for p in chunk]


def snapshot(client: Client, model: str, probe: Sequence[Any]) -> tuple[Any, list[float]]:
    """What must not change when a request is refused: the model's state (but for what a
    background checkpoint may change, see :func:`comparable`) and its probe scores."""
    return comparable(state(client, model)), scores(client, model, probe)


def unit_vector(row: Sequence[float], n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """What the service scores for a dense row: its non-zeros, L2-normalised with the shared kernel."""
    idx, val = canonical(np.asarray(row, dtype=np.float64), n_features)
    return idx, unit_l2(val)


def served(config: Any, row: Sequence[float]) -> Any:
    """What the service hands ``config``'s learner for a dense row: L2-normalised when the service
    scales requests (``request_normalize == "l2"``), else the row as sent (the default ensemble
    normalises for its members)."""
    model = config if isinstance(config, ModelConfig) else ModelConfig.model_validate(config)
    arr = np.asarray(row, dtype=np.float64)
    return unit_l2(arr) if model.request_normalize == "l2" else arr


def refused(error: ApiError, status: int, field: str, problem: str) -> None:
    """``status``, and a detail entry whose ``loc`` names ``field`` and whose ``msg`` says ``problem``."""
    assert error.status == status, error
    named = [d for d in error.detail if field in [str(part) for part in d.loc]]
    assert named, f"no detail names {field!r}: {error.detail}"
    assert any(problem.lower() in d.msg.lower() for d in named), f"no detail on {field!r} says {problem!r}"
