"""Labels: each goes to its model's log (the store checks the generation is current and numbers the
entry), this replica waits until its follower has applied it, and the result comes back.

A prediction id is read once, where the request enters (:meth:`LabelItem.read`); the parts travel
down as a :class:`~model_store.PredictionId`. The label path never installs a model: a label for a
model, or a generation of it, that this process does not hold yet is answered ``model_unavailable``
with a short retry advice, and the control follower is asked to load it
(:meth:`~service.engine.registry.Registry.request_refresh`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from model_store import GenerationGone, PredictionId, PredictionIdError, parse_prediction_id

from ..settings import Settings
from .errors import (
    EngineError,
    InvalidRequest,
    LabelConflict,
    ModelGone,
    ModelUnavailable,
    UnknownPrediction,
)
from .instances import InstanceReader
from .observer import Observer
from .registry import Registry
from .replica import LabelAnswer, ModelReplica
from .runtime import Applied

LOADING_RETRY_SECONDS = 1.0
"""The retry advice for a label whose model (or generation) this process is still loading."""


@dataclass(frozen=True, slots=True)
class LabelItem:
    """One label as a request sends it: the prediction id as written, its parts (None: not an id
    this service issues) and the label value, not yet checked against the model."""

    text: str
    pid: PredictionId | None
    label: Any

    @classmethod
    def read(cls, text: str, label: Any) -> LabelItem:
        """Read the prediction id ``text`` (the one place it is parsed)."""
        try:
            pid: PredictionId | None = parse_prediction_id(text)
        except PredictionIdError:
            pid = None
        return cls(text, pid, label)

    @property
    def model(self) -> str | None:
        return None if self.pid is None else self.pid.model


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """The answer for one label: applied (first time, or again for a retry: ``duplicate``), or an
    error (``error`` set). ``updated`` is None when this replica does not remember whether the
    first application moved the weights."""

    prediction_id: str
    model: str | None
    applied: bool = False
    duplicate: bool = False
    updated: bool | None = False
    model_version: int | None = None
    delay_seconds: float | None = None
    error: EngineError | None = None
    ignored: tuple[str, ...] = ()
    """Feature names of the example the model could not register, so did not learn from."""


@dataclass(frozen=True, slots=True)
class LabelRouter:
    """Routes labels to their models' logs and shapes the results; see the module docstring."""

    settings: Settings
    registry: Registry
    reader: InstanceReader
    observer: Observer

    async def feedback(self, items: Sequence[LabelItem]) -> list[FeedbackResult]:
        """Labels for earlier predictions. Invalid labels refuse the whole request (nothing
        applied); ids that cannot be resolved get a per-item error."""
        results: list[FeedbackResult | None] = [None] * len(items)
        groups: dict[str, list[tuple[int, PredictionId, int]]] = {}
        batch = len(items) > 1
        self.reader.check_batch("items", len(items), "labels")
        self.registry.check_store()
        for i, item in enumerate(items):
            prefix = f"items[{i}]." if batch else ""
            routed = await self._route(item, f"{prefix}prediction_id")
            if isinstance(routed, FeedbackResult):
                results[i] = routed
                continue
            assert item.pid is not None
            try:
                label = self._label(routed, item.label, f"{prefix}label")
            except InvalidRequest:  # refuses the whole request: nothing applied yet
                self.observer.rejected(routed.name, "invalid_label")
                raise
            groups.setdefault(routed.name, []).append((i, item.pid, label))
        for model in groups:
            self.registry.serving(model)
        if len(groups) == 1:  # one model (the usual case): no task per request
            [(only, members)] = groups.items()
            answers = [await self._label_group(only, [(pid, y) for _, pid, y in members])]
        else:
            answers = await asyncio.gather(
                *(self._label_group(m, [(pid, y) for _, pid, y in members]) for m, members in groups.items())
            )
        for (model, members), answer in zip(groups.items(), answers, strict=True):
            for (i, _, _), outcome in zip(members, answer, strict=True):
                prefix = f"items[{i}]." if batch else ""
                results[i] = self._result(model, items[i].text, outcome, prefix)
        for r in results:
            if r is None or r.model is None or r.model not in self.registry.replicas:
                continue
            if r.duplicate:
                self.observer.rejected(r.model, "duplicate")
            elif r.error is not None:
                self.observer.rejected(r.model, r.error.reason)
            elif r.ignored:
                self.observer.features_ignored(r.model, "label", len(r.ignored))
        return [r for r in results if r is not None]

    async def _route(self, item: LabelItem, field: str) -> ModelReplica | FeedbackResult:
        """The replica that takes ``item``'s label, or the item's answer when none does."""
        pid, text = item.pid, item.text
        if pid is None:
            problem = f"{text!r} is not a prediction id this service issued"
            return FeedbackResult(text, None, error=UnknownPrediction(field, problem, "unknown"))
        model, failed = pid.model, self.registry.failed.get(pid.model)
        if failed is not None:
            problem = f"model {model!r} cannot serve: {failed.reason}"
            return FeedbackResult(text, model, error=ModelUnavailable("model", problem))
        replica = self.registry.replicas.get(model)
        if replica is not None and pid.generation < replica.generation:
            gone = (
                f"made by generation {pid.generation} of model {model!r}, since replaced by generation "
                f"{replica.generation}"
            )
            return FeedbackResult(text, model, error=ModelGone(field, gone))
        if replica is not None and pid.generation == replica.generation:
            return replica
        record = await self.registry.store.load_model(model)
        if record is not None and record.generation == pid.generation:  # not loaded here yet
            self.registry.request_refresh(model)
            unavailable = ModelUnavailable(
                "model", f"generation {pid.generation} of model {model!r} is still loading on this replica"
            )
            unavailable.retry_after = LOADING_RETRY_SECONDS
            return FeedbackResult(text, model, error=unavailable)
        if record is None and 0 < pid.generation <= await self.registry.store.last_generation(model):
            if replica is not None:
                self.registry.request_refresh(model)
            gone = f"made by generation {pid.generation} of model {model!r}, which was deleted"
            return FeedbackResult(text, model, error=ModelGone(field, gone))
        if record is not None and pid.generation < record.generation:
            self.registry.request_refresh(model)
            gone = (
                f"made by generation {pid.generation} of model {model!r}, since replaced by generation "
                f"{record.generation}"
            )
            return FeedbackResult(text, model, error=ModelGone(field, gone))
        problem = f"{text!r} is unknown: model {model!r} never issued it"
        return FeedbackResult(text, model, error=UnknownPrediction(field, problem, "unknown"))

    def _label(self, replica: ModelReplica, raw: Any, field: str) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int):  # 1.0 is not a label: one spelling each
            raise InvalidRequest(field, f"must be the integer -1 or +1 (0 or 1 for zero_one), got {raw!r}")
        if replica.config.label_format == "zero_one":
            if raw in (0, 1):
                return 1 if raw == 1 else -1
            raise InvalidRequest(field, f"must be 0 or 1 for model {replica.name!r}, got {raw!r}")
        if raw in (-1, 1):
            return int(raw)
        raise InvalidRequest(field, f"must be -1 or +1 for model {replica.name!r}, got {raw!r}")

    async def _label_group(
        self, model: str, items: list[tuple[PredictionId, int]]
    ) -> list[LabelAnswer | EngineError]:
        replica = self.registry.replicas[model]
        try:
            return list(await replica.label(items))
        except GenerationGone as exc:
            self.registry.request_refresh(model)
            gone = ModelGone("prediction_id", f"model {model!r}: {exc}")
            return [gone] * len(items)

    def _result(self, model: str, pid: str, answer: LabelAnswer | EngineError, prefix: str) -> FeedbackResult:
        if isinstance(answer, EngineError):
            return FeedbackResult(pid, model, error=answer)
        outcome, applied = answer.outcome, answer.applied
        delay = None
        if outcome.labelled_at is not None and outcome.predicted_at is not None:
            delay = max(0.0, outcome.labelled_at - outcome.predicted_at)
        if outcome.status in ("appended", "duplicate"):
            return FeedbackResult(
                pid,
                model,
                applied=True,
                duplicate=outcome.status == "duplicate",
                updated=None if applied is None else applied.updated,
                model_version=outcome.seq,
                delay_seconds=delay if applied is None else applied.delay,
                ignored=() if applied is None else applied.ignored,
            )
        if outcome.status == "conflict":
            replica = self.registry.replicas.get(model)
            first = outcome.first_y
            if replica is not None and replica.config.label_format == "zero_one" and first is not None:
                first = 1 if first == 1 else 0
            problem = f"{pid!r} was labelled {first} already (log entry {outcome.seq}); a label cannot change"
            return FeedbackResult(pid, model, error=LabelConflict(f"{prefix}label", problem))
        if outcome.status == "expired":
            problem = f"{pid!r} expired: its label window of {self.settings.label_ttl_seconds:g} s has passed"
        else:
            problem = f"{pid!r} is unknown: never issued, not stored, or already forgotten"
        return FeedbackResult(
            pid, model, error=UnknownPrediction(f"{prefix}prediction_id", problem, outcome.status)
        )

    async def feedback_examples(self, model: str, items: Sequence[tuple[Any, Any]]) -> list[FeedbackResult]:
        """Labelled examples that were never scored: predicted and learned at apply time."""
        replica = self.registry.serving(model)
        self.reader.check_batch("items", len(items), "examples")
        batch = len(items) > 1
        parsed = []
        for i, (features, raw) in enumerate(items):
            prefix = f"items[{i}]." if batch else ""
            example, _ = self.reader.read(replica, features, f"{prefix}features", labelled=True)
            try:
                label = self._label(replica, raw, f"{prefix}label")
            except InvalidRequest:
                self.observer.rejected(model, "invalid_label")
                raise
            parsed.append((example, label))
        try:
            appended = await replica.append_examples(parsed)
        except GenerationGone as exc:
            self.registry.request_refresh(model)
            raise ModelGone("model", f"model {model!r}: {exc}") from None
        results = [_example_result(model, pid, applied) for pid, applied in appended]
        ignored = sum(len(r.ignored) for r in results)
        if ignored:
            self.observer.features_ignored(model, "label", ignored)
        return results


def _example_result(model: str, pid: str, applied: Applied | None) -> FeedbackResult:
    return FeedbackResult(
        pid,
        model,
        applied=True,
        updated=None if applied is None else applied.updated,
        model_version=None if applied is None else applied.seq,
        delay_seconds=0.0,
        ignored=() if applied is None else applied.ignored,
    )
