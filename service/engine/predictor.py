"""Predictions: a request's features become scores ``mu . x`` now, and pending predictions (vector,
predicted label, time) kept in the store under new prediction ids for their label window.

In two steps, so that a caller handling many messages needs no task per message: :meth:`Predictor.start`
scores and hands the pending records to the model's group commit (:mod:`.pending`), and
:meth:`Predictor.finish` answers once they are stored."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from model_store import PendingLimitExceeded, PendingPrediction, StoreError, make_prediction_id

from ..settings import Settings
from .errors import InvalidRequest, LimitExceeded, ModelUnavailable
from .instances import InstanceReader
from .observer import Observer
from .registry import Registry


@dataclass(frozen=True, slots=True)
class Prediction:
    prediction_id: str
    label: int
    score: float
    model: str
    model_version: int
    ignored: tuple[str, ...] = ()
    """Feature names the model cannot take (its ``max_features`` slots are all taken)."""


@dataclass(frozen=True, slots=True)
class Scored:
    """A request's predictions, scored, while their pending records are being stored."""

    model: str
    predictions: list[Prediction]
    stored: asyncio.Future[None]
    """Done once the pending records are stored (or failed with the store's error)."""

    async def settled(self) -> None:
        """Wait until ``stored`` is done; its outcome is not raised here but read by
        :meth:`Predictor.finish`."""
        with contextlib.suppress(Exception):
            await self.stored


@dataclass(frozen=True, slots=True)
class Predictor:
    """Scores instances and keeps the pending predictions; see the module docstring."""

    settings: Settings
    registry: Registry
    reader: InstanceReader
    observer: Observer

    def resolve_model(self, model: str | None) -> str:
        """The model a request names, or the configured default model when it names none; a request
        without ``model`` is refused when no default model is configured (``ACOG_DEFAULT_MODEL``)."""
        if model is not None:
            return model
        if self.settings.default_model is None:
            raise InvalidRequest(
                "model", "is required: this service has no default model (ACOG_DEFAULT_MODEL is not set)"
            )
        return str(self.settings.default_model.get("name", "default"))

    def label_format(self, model: str) -> str:
        """How model ``model`` writes its labels: ``plus_minus_one`` (-1/+1) or ``zero_one`` (0/1)."""
        replica = self.registry.replicas.get(model)
        return "plus_minus_one" if replica is None else replica.config.label_format

    async def predict(self, model: str | None, instances: Sequence[Any]) -> tuple[list[Prediction], bool]:
        """Score every instance; returns the predictions and whether they were stored."""
        scored = self.start(model, instances)
        await scored.settled()
        return self.finish(scored)

    def start(self, model: str | None, instances: Sequence[Any]) -> Scored:
        """Score every instance now and hand their pending records to the model's pending writer
        (:meth:`finish` answers once ``stored`` is done). Refusals (an unknown model, invalid
        features) raise here, before anything is stored."""
        model = self.resolve_model(model)
        replica = self.registry.serving(model)
        runtime = replica.runtime
        self.reader.check_batch("instances", len(instances), "instances")
        parsed = []
        for i, features in enumerate(instances):
            field = "features" if len(instances) == 1 else f"instances[{i}].features"
            parsed.append(self.reader.read(replica, features, field))
        now = time.time()
        version = runtime.version
        pending, out = [], []
        for example, vector in parsed:
            score = runtime.score(vector)
            if not math.isfinite(score):
                raise ModelUnavailable(
                    "model",
                    f"model {model!r} cannot score: its weights are no longer finite (diverged); "
                    f"replace it with PUT /models/{model}?replace=true",
                )
            label = 1 if score >= 0.0 else -1
            runtime.shadow(vector, label)  # every challenger scores it too; not returned
            pid = make_prediction_id(model, replica.generation, now)
            pending.append(PendingPrediction(pid, example, label, score, now))
            ignored = runtime.features.unregistrable(example.names or ())
            out.append(Prediction(pid, label, score, model, version, ignored))
        return Scored(model, out, replica.submit_pending(pending))

    def finish(self, scored: Scored) -> tuple[list[Prediction], bool]:
        """The predictions of ``scored`` once its pending records are stored (``scored.stored`` is
        done), and whether they were: a store that is down answers from memory unless
        ``predict_when_store_down`` is off; a full model refuses them (``max_pending_per_model``)."""
        model, out = scored.model, scored.predictions
        error = scored.stored.exception()
        stored = error is None
        if isinstance(error, PendingLimitExceeded):
            self.observer.predictions_refused(model, "pending_limit", len(out))
            raise LimitExceeded("instances", f"{error} (max_pending_per_model)") from None
        if isinstance(error, StoreError):  # unavailable, or a write Redis refused (a full disk)
            if not self.settings.predict_when_store_down:
                raise error
        elif error is not None:
            raise error
        anomalies = sum(p.label == 1 for p in out)
        self.observer.predictions(model, anomalies, len(out) - anomalies)
        n_ignored = sum(len(p.ignored) for p in out)
        if n_ignored:
            self.observer.features_ignored(model, "predict", n_ignored)
        return out, stored
