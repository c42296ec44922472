"""The engine: named models over one store, in the order design.md describes.

- ``predict``: parse and normalise, score ``mu . x`` now, keep the pending prediction
  (vector, predicted label, time) in the store under a new prediction id, answer.
- ``feedback``: hand the label to the model's writer, which appends a self-contained event
  to the model's label log and applies the log in stream order before answering.
- start-up: for each model, load the newest checkpoint that decodes (falling back to older
  ones), replay the log after it, then serve.
- maintenance: count and sweep pending predictions, and checkpoint models whose last
  checkpoint is older than ``checkpoint_every_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from model_store import (
    CodecError,
    Example,
    InvalidModelName,
    ModelRecord,
    ModelStore,
    PendingLimitExceeded,
    PendingPrediction,
    PredictionIdError,
    StoreError,
    StoreUnavailable,
    make_prediction_id,
    parse_prediction_id,
    validate_model_name,
)

from ..features import FeatureError
from ..learners.inputs import SparseVector
from ..model_config import ModelConfig
from ..settings import Settings
from .checkpoint import CheckpointMismatch, Snapshot
from .errors import (
    EngineError,
    InvalidRequest,
    LimitExceeded,
    ModelGone,
    ModelUnavailable,
    UnknownModel,
    UnknownPrediction,
)
from .pending import PendingWriter
from .runtime import Applied, ModelRuntime
from .writer import LabelWriter, WriterSettings

log = logging.getLogger("acog.engine")
REPLAY_BATCH = 1000
REJECTION_REASONS: dict[type[EngineError], str] = {
    ModelGone: "model_gone",
    ModelUnavailable: "model_unavailable",
}


class Observer:
    """What the engine reports as it works; these no-ops are the default, and the telemetry
    (:class:`service.telemetry.Telemetry`) overrides them."""

    def model_added(self, model: str) -> None:
        """A model started serving."""

    def model_removed(self, model: str) -> None:
        """A model was deleted."""

    def predictions(self, model: str, anomalies: int, normals: int) -> None:
        """Predictions were answered."""

    def applied(self, model: str, applied: Applied) -> None:
        """A logged label was learned."""

    def rejected(self, model: str, reason: str, count: int = 1) -> None:
        """Labels were not applied (duplicate, unknown, expired, gone, invalid)."""

    def expired(self, model: str, count: int) -> None:
        """Pending predictions expired unlabelled."""


@dataclass(frozen=True, slots=True)
class Prediction:
    prediction_id: str
    label: int
    score: float
    model: str
    model_version: int


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """The answer for one label: applied, a duplicate, or an error (``error`` set)."""

    prediction_id: str
    model: str | None
    applied: bool = False
    duplicate: bool = False
    updated: bool = False
    model_version: int | None = None
    delay_seconds: float | None = None
    error: EngineError | None = None


class Engine:
    """Every model of this process; see the module docstring."""

    def __init__(self, store: ModelStore, settings: Settings, observer: Observer | None = None) -> None:
        self.store = store
        self.settings = settings
        self.observer = observer or Observer()
        self.runtimes: dict[str, ModelRuntime] = {}
        self.writers: dict[str, LabelWriter] = {}
        self.pending_writers: dict[str, PendingWriter] = {}
        self.retired: dict[str, int] = {}  # deleted model -> its last generation (this process)
        self.failed: dict[str, str] = {}
        self.pending_counts: dict[str, int] = {}
        self.ready = False
        self._lock = asyncio.Lock()  # model management (create, replace, delete)
        self._maintenance: asyncio.Task[None] | None = None
        self._writer_settings = WriterSettings(
            label_window_seconds=settings.label_ttl_seconds,
            done_ttl_seconds=settings.done_ttl_seconds,
            checkpoint_every_events=settings.checkpoint_every_events,
            checkpoints_kept=settings.checkpoints_kept,
            fault_delay_seconds=settings.fault_checkpoint_delay_seconds,
        )

    # --- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Recover every stored model, create the default one if needed, start maintenance."""
        for record in await self.store.load_models():
            await self._recover(record)
        default = self.settings.default_model
        if default is not None:
            spec = dict(default)
            name = str(spec.pop("name", "default"))
            if name not in self.runtimes and name not in self.failed:
                await self.put_model(name, ModelConfig.model_validate(spec))
        self._maintenance = asyncio.create_task(self._maintain(), name="maintenance")
        self.ready = True

    async def stop(self) -> None:
        """Checkpoint every model (clean shutdown), then stop the tasks."""
        self.ready = False
        if self._maintenance is not None:
            self._maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._maintenance
        for name, writer in list(self.writers.items()):
            try:
                await asyncio.wait_for(writer.checkpoint(), timeout=10)
            except Exception as exc:
                log.warning("model %s: no checkpoint at shutdown (%s); the log replays on start", name, exc)
            await self._retire(name, ModelUnavailable("model", "the service is shutting down"))

    async def _recover(self, record: ModelRecord) -> None:
        name, generation = record.name, record.generation
        try:
            runtime = self._new_runtime(name, generation, ModelConfig.model_validate(record.config))
        except Exception as exc:
            self.failed[name] = f"stored configuration cannot be loaded: {exc}"
            log.error("model %s: %s", name, self.failed[name])
            return
        tried = 0
        async for checkpoint in self.store.iter_checkpoints(name, generation):  # newest first, one at a time
            tried += 1
            try:
                runtime.restore(Snapshot.decode(checkpoint.blob, generation, runtime.config_json))
                break
            except (CodecError, CheckpointMismatch, ValueError, KeyError, TypeError) as exc:
                log.error(
                    "model %s: checkpoint at %s is unusable (%s); falling back to an older one",
                    name,
                    checkpoint.applied_id,
                    exc,
                )
        else:
            if tried:  # each checkpoint write trims the log: without one, it cannot be replayed
                self.failed[name] = "no stored checkpoint could be decoded and the log before them is trimmed"
                log.error("model %s: %s", name, self.failed[name])
                return
        replayed = 0
        while entries := await self.store.read_log(name, generation, runtime.applied_id, REPLAY_BATCH):
            for entry in entries:
                runtime.apply(entry)
            replayed += len(entries)
        log.info(
            "model %s (generation %d): recovered at version %d (%d replayed)",
            name,
            generation,
            runtime.version,
            replayed,
        )
        self._serve(runtime)

    def _new_runtime(self, name: str, generation: int, config: ModelConfig) -> ModelRuntime:
        return ModelRuntime(
            name, generation, config, self.settings.memory_budget_bytes, self.settings.metrics_window
        )

    def _serve(self, runtime: ModelRuntime) -> None:
        writer = LabelWriter(
            runtime,
            self.store,
            self._writer_settings,
            on_applied=lambda rt, a: self.observer.applied(rt.name, a),
            on_checkpoint=lambda rt, at: None,
        )
        writer.start()
        self.runtimes[runtime.name] = runtime
        self.writers[runtime.name] = writer
        self.pending_writers[runtime.name] = PendingWriter(
            self.store,
            runtime.name,
            runtime.generation,
            self.settings.label_ttl_seconds,
            self.settings.max_pending_per_model,
        )
        self.failed.pop(runtime.name, None)
        self.observer.model_added(runtime.name)

    # --- models ---------------------------------------------------------------------------

    def check_config(self, config: ModelConfig) -> None:
        """Refuse a configuration that passes its schema but not the service's limits."""
        if config.dimension > self.settings.max_n_features:
            field = "n_features" if config.n_features is not None else "max_features"
            raise LimitExceeded(
                field,
                f"{config.dimension} is over the limit of {self.settings.max_n_features} (max_n_features)",
            )
        budget = self.settings.memory_budget_bytes
        refused = config.inapplicable(budget)
        if refused:
            raise InvalidRequest(refused[0], f"is not a parameter of {config.resolved_algorithm(budget)}")
        try:
            config.build_learner(budget)
        except ValueError as exc:
            field, _, problem = str(exc).partition(": ")
            raise InvalidRequest(field if problem else "config", problem or str(exc)) from None

    async def put_model(self, name: str, config: ModelConfig) -> tuple[ModelRecord, bool]:
        """Create a model, or replace it with a new generation. Returns ``(record, replaced)``."""
        try:
            validate_model_name(name)
        except InvalidModelName as exc:
            raise InvalidRequest("name", str(exc)) from None
        self.check_config(config)
        config = config.pinned(self.settings.memory_budget_bytes)
        async with self._lock:
            replaced = name in self.runtimes or name in self.failed
            if not replaced and len(self.runtimes) + len(self.failed) >= self.settings.max_models:
                raise LimitExceeded(
                    "name", f"the service holds its maximum of {self.settings.max_models} models (max_models)"
                )
            generation = await self.store.next_generation(name)
            record = ModelRecord(name, generation, config.model_dump(mode="json"), time.time())
            runtime = self._new_runtime(name, generation, config)
            await self.store.save_model(record)
            old = self.runtimes.get(name)
            if old is not None:
                await self._retire(name, ModelGone("model", f"model {name!r} was replaced meanwhile"))
                with contextlib.suppress(StoreUnavailable):
                    await self.store.delete_generation(name, old.generation)
            self._serve(runtime)
            return record, replaced

    async def delete_model(self, name: str) -> None:
        async with self._lock:
            if name not in self.runtimes and name not in self.failed:
                raise UnknownModel("name", f"no model named {name!r}")
            await self.store.delete_model(name)
            if name in self.runtimes:
                self.retired[name] = self.runtimes[name].generation
            self.runtimes.pop(name, None)
            self.failed.pop(name, None)
            self.pending_counts.pop(name, None)
            await self._retire(name, ModelGone("model", f"model {name!r} was deleted meanwhile"))
            self.observer.model_removed(name)

    async def _retire(self, name: str, error: EngineError) -> None:
        """Stop a model's writers; requests still waiting on them fail with ``error``."""
        writer = self.writers.pop(name, None)
        if writer is not None:
            await writer.stop(error)
        pending = self.pending_writers.pop(name, None)
        if pending is not None:
            await pending.stop(error)

    def runtime(self, name: str) -> ModelRuntime:
        """The live model ``name``, or the reason it cannot serve."""
        if name in self.failed:
            raise ModelUnavailable("model", f"model {name!r} cannot serve: {self.failed[name]}")
        runtime = self.runtimes.get(name)
        if runtime is None:
            raise UnknownModel("model", f"no model named {name!r}")
        failure = self.writers[name].failure
        if failure is not None:
            raise ModelUnavailable("model", f"model {name!r} stopped: {failure}")
        return runtime

    async def checkpoint(self, name: str) -> bool:
        self.runtime(name)
        return await self.writers[name].checkpoint()

    def _check_batch(self, field: str, size: int, what: str) -> None:
        if size > self.settings.max_batch:
            raise LimitExceeded(
                field, f"{size} {what}, over the limit of {self.settings.max_batch} (max_batch)", 413
            )

    # --- predictions ----------------------------------------------------------------------

    async def predict(self, model: str, instances: Sequence[Any]) -> tuple[list[Prediction], bool]:
        """Score every instance; returns the predictions and whether they were stored."""
        runtime = self.runtime(model)
        self._check_batch("instances", len(instances), "instances")
        parsed = []
        for i, features in enumerate(instances):
            field = "features" if len(instances) == 1 else f"instances[{i}].features"
            parsed.append(self._parse(runtime, features, field))
        now = time.time()
        version = runtime.version
        pending, out = [], []
        for example, vector in parsed:
            score = runtime.score(vector)
            if not math.isfinite(score):
                raise ModelUnavailable(
                    "model",
                    f"model {model!r} cannot score: its weights are no longer finite (diverged); "
                    f"replace it with PUT /models/{model}",
                )
            label = 1 if score >= 0.0 else -1
            pid = make_prediction_id(model, runtime.generation, now)
            pending.append(PendingPrediction(pid, example, label, score, now))
            out.append(Prediction(pid, label, score, model, version))
        stored = True
        try:
            await self.pending_writers[model].put(pending)
        except PendingLimitExceeded as exc:
            raise LimitExceeded("instances", f"{exc} (max_pending_per_model)") from None
        except StoreError:  # unavailable, or a write Redis refused (a full disk): answer from memory
            if not self.settings.predict_when_store_down:
                raise
            stored = False
        anomalies = sum(p.label == 1 for p in out)
        self.observer.predictions(model, anomalies, len(out) - anomalies)
        return out, stored

    def _parse(self, runtime: ModelRuntime, features: Any, field: str) -> tuple[Example, SparseVector]:
        """One instance's example and vector, or the refusal naming the field."""
        try:
            example, vector = runtime.features.parse(features, field)
        except FeatureError as exc:
            self.observer.rejected(runtime.name, "invalid_features")
            raise InvalidRequest(exc.field, exc.problem) from None
        bound = self.settings.max_feature_value
        if (
            runtime.config.normalize == "none"
            and example.values.size
            and np.abs(example.values).max() > bound
        ):
            self.observer.rejected(runtime.name, "invalid_features")
            raise LimitExceeded(
                field,
                f"has a value of absolute size over {bound:g} (max_feature_value), which a model "
                'with normalize: "none" cannot learn from without overflow',
            )
        return example, vector

    # --- labels ---------------------------------------------------------------------------

    def _gone(self, model: str, generation: int, runtime: ModelRuntime | None) -> str | None:
        """Why a prediction's generation no longer exists, if it existed: replaced, or deleted
        (deletions are remembered by this process; after a restart such ids are unknown)."""
        if runtime is not None and generation < runtime.generation:
            now = runtime.generation
            return f"made by generation {generation} of model {model!r}, since replaced by generation {now}"
        if runtime is None and generation <= self.retired.get(model, 0):
            return f"made by generation {generation} of model {model!r}, which was deleted"
        return None

    def _label(self, runtime: ModelRuntime, raw: Any, field: str) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise InvalidRequest(field, f"must be a number, got {raw!r}")
        if runtime.config.label_format == "zero_one":
            if raw in (0, 1):
                return 1 if raw == 1 else -1
            raise InvalidRequest(field, f"must be 0 or 1 for model {runtime.name!r}, got {raw!r}")
        if raw in (-1, 1):
            return int(raw)
        raise InvalidRequest(field, f"must be -1 or +1 for model {runtime.name!r}, got {raw!r}")

    async def feedback(self, items: Sequence[tuple[str, Any]]) -> list[FeedbackResult]:
        """Labels for earlier predictions. Invalid labels refuse the whole request (nothing
        applied); ids that cannot be resolved get a per-item error."""
        results: list[FeedbackResult | None] = [None] * len(items)
        groups: dict[str, list[tuple[int, str, int]]] = {}
        batch = len(items) > 1
        self._check_batch("items", len(items), "labels")
        for i, (pid, raw) in enumerate(items):
            prefix = f"items[{i}]." if batch else ""
            try:
                parsed = parse_prediction_id(pid)
            except PredictionIdError:
                results[i] = FeedbackResult(
                    pid,
                    None,
                    error=UnknownPrediction(
                        f"{prefix}prediction_id",
                        f"{pid!r} is not a prediction id this service issued",
                        "unknown",
                    ),
                )
                continue
            runtime = self.runtimes.get(parsed.model)
            if parsed.model in self.failed:
                problem = f"model {parsed.model!r} cannot serve: {self.failed[parsed.model]}"
                results[i] = FeedbackResult(pid, parsed.model, error=ModelUnavailable("model", problem))
                continue
            gone = self._gone(parsed.model, parsed.generation, runtime)
            if gone is not None:
                results[i] = FeedbackResult(
                    pid, parsed.model, error=ModelGone(f"{prefix}prediction_id", gone)
                )
                continue
            if runtime is None or parsed.generation != runtime.generation:  # never issued by any generation
                problem = f"{pid!r} is unknown: model {parsed.model!r} never issued it"
                error = UnknownPrediction(f"{prefix}prediction_id", problem, "unknown")
                results[i] = FeedbackResult(pid, parsed.model, error=error)
                continue
            try:
                label = self._label(runtime, raw, f"{prefix}label")
            except InvalidRequest:  # refuses the whole request: nothing applied yet
                self.observer.rejected(parsed.model, "invalid_label")
                raise
            groups.setdefault(parsed.model, []).append((i, pid, label))
        for model in groups:
            self.runtime(model)
        answers = await asyncio.gather(
            *(
                self.writers[m].submit_labels([(pid, y) for _, pid, y in members])
                for m, members in groups.items()
            )
        )
        for (model, members), answer in zip(groups.items(), answers, strict=True):
            version = self.runtimes[model].version
            for (i, pid, _), (outcome, applied) in zip(members, answer, strict=True):
                prefix = f"items[{i}]." if batch else ""
                results[i] = self._result(model, pid, outcome.status, applied, version, prefix)
        for r in results:
            if r is None or r.model is None:
                continue
            if r.duplicate:
                self.observer.rejected(r.model, "duplicate")
            elif r.error is not None:
                reason = getattr(r.error, "reason", None) or REJECTION_REASONS.get(type(r.error), "invalid")
                self.observer.rejected(r.model, reason)

        return [r for r in results if r is not None]

    def _result(
        self, model: str, pid: str, status: str, applied: Applied | None, version: int, prefix: str
    ) -> FeedbackResult:
        if status == "appended" and applied is not None:
            return FeedbackResult(
                pid,
                model,
                applied=True,
                updated=applied.updated,
                model_version=applied.version,
                delay_seconds=applied.delay,
            )
        if status == "duplicate":
            return FeedbackResult(pid, model, duplicate=True, model_version=version)
        if status == "expired":
            problem = f"{pid!r} expired: its label window of {self.settings.label_ttl_seconds:g} s has passed"
        else:
            problem = f"{pid!r} is unknown: never issued, not stored, or already forgotten"
        return FeedbackResult(pid, model, error=UnknownPrediction(f"{prefix}prediction_id", problem, status))

    async def feedback_examples(self, model: str, items: Sequence[tuple[Any, Any]]) -> list[FeedbackResult]:
        """Labelled examples that were never scored: predicted and learned at apply time."""
        runtime = self.runtime(model)
        self._check_batch("items", len(items), "examples")
        batch = len(items) > 1
        parsed = []
        for i, (features, raw) in enumerate(items):
            prefix = f"items[{i}]." if batch else ""
            example, _ = self._parse(runtime, features, f"{prefix}features")
            parsed.append((example, self._label(runtime, raw, f"{prefix}label")))
        applied = await self.writers[model].submit_examples(parsed)
        return [
            FeedbackResult(
                a.prediction_id,
                model,
                applied=True,
                updated=a.updated,
                model_version=a.version,
                delay_seconds=0.0,
            )
            for a in applied
        ]

    # --- maintenance ----------------------------------------------------------------------

    async def _maintain(self) -> None:
        while True:
            await asyncio.sleep(self.settings.maintenance_interval_seconds)
            try:
                await self.maintain_once()
            except StoreUnavailable as exc:
                log.warning("maintenance skipped: %s", exc)
            except Exception:
                log.exception("maintenance failed")

    async def maintain_once(self) -> None:
        now = time.time()
        for name, runtime in list(self.runtimes.items()):
            expired = await self.store.sweep_expired(name, runtime.generation, now)
            if expired:
                self.observer.expired(name, expired)
            self.pending_counts[name] = await self.store.count_pending(name, runtime.generation, now)
            due = (
                runtime.checkpointed_at is None
                or now - runtime.checkpointed_at >= self.settings.checkpoint_every_seconds
            )
            if runtime.version > runtime.checkpointed_version and due and name in self.writers:
                with contextlib.suppress(Exception):  # logged by the writer; retried next round
                    await self.writers[name].checkpoint()

    async def ping(self) -> None:
        await self.store.ping()
