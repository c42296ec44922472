"""The engine: this process's replicas of every model, over one store, in the order design.md describes.

- ``predict``: parse and normalise, score ``mu . x`` now, keep the pending prediction
  (vector, predicted label, time) in the store under a new prediction id, answer.
- ``feedback``: append the label to the model's log (the store checks the generation is
  current and numbers the entry), wait until this replica's follower has applied it, answer.
- start-up: recover every model (checkpoint, then the log after it), then follow.
- life cycle: create, replace and delete go through the store, which announces them on the
  control stream; every replica follows that stream (and reconciles with the model records now
  and then), so a change made on one replica reaches all of them within a second.
- maintenance: count and sweep pending predictions; check that the store is still the one the
  engine started on (a Redis that lost its data is refused, not served into).

Each model is one :class:`~service.engine.replica.ModelReplica`; the API and the telemetry read
them through :class:`~service.engine.view.ModelView`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import os
import secrets
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from model_store import (
    ControlEvent,
    Example,
    GenerationGone,
    InvalidModelName,
    LogRetention,
    ModelRecord,
    ModelStore,
    PendingLimitExceeded,
    PendingPrediction,
    PredictionIdError,
    StoreError,
    StoreIdentity,
    StoreUnavailable,
    make_prediction_id,
    parse_prediction_id,
    validate_model_name,
)

from ..features import FeatureError
from ..learners import warm_up
from ..learners.inputs import SparseVector
from ..model_config import ModelConfig
from ..schema_change import EVENT_KIND as SCHEMA_EVENT
from ..schema_change import SchemaChangeError, SchemaChangeRequest, plan
from ..settings import Settings
from .cancellation import finish, reraise_cancellation
from .errors import (
    EngineError,
    InvalidRequest,
    LabelConflict,
    LimitExceeded,
    ModelConflict,
    ModelGone,
    ModelUnavailable,
    StoreLost,
    UnknownModel,
    UnknownPrediction,
)
from .observer import Observer
from .replica import LabelAnswer, ModelReplica, ReplicaSettings, Status
from .runtime import Applied
from .view import FailedModel, ModelView

log = logging.getLogger("acog.engine")

RECONCILE_SECONDS = 30.0
"""How often every replica compares its models with the stored records (a safety net under the
control stream)."""

PutOutcome = Literal["created", "replaced", "unchanged"]


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


def replica_id() -> str:
    """A name for this process that no other process has: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Engine:
    """Every model of this process; see the module docstring."""

    def __init__(self, store: ModelStore, settings: Settings, observer: Observer | None = None) -> None:
        self.store = store
        self.settings = settings
        self.observer = observer or Observer()
        self.replica_id = replica_id()
        self.replicas: dict[str, ModelReplica] = {}
        self.failed: dict[str, FailedModel] = {}
        self.ready = False
        self.identity: StoreIdentity | None = None
        self.store_lost: str | None = None
        self._lock = asyncio.Lock()  # installing and removing models
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._replica_settings = ReplicaSettings(
            replica_id=self.replica_id,
            label_window_seconds=settings.label_ttl_seconds,
            done_ttl_seconds=settings.done_ttl_seconds,
            checkpoint_every_events=settings.checkpoint_every_events,
            checkpoint_every_seconds=settings.checkpoint_every_seconds,
            checkpoints_kept=settings.checkpoints_kept,
            lease_seconds=settings.checkpoint_lease_seconds,
            follow_block_seconds=min(1.0, settings.redis_timeout_seconds / 2),
            apply_timeout_seconds=2 * settings.redis_timeout_seconds,
            max_pending=settings.max_pending_per_model,
            memory_budget=settings.memory_budget_bytes,
            metrics_window=settings.metrics_window,
            fault_delay_seconds=settings.fault_checkpoint_delay_seconds,
            log_retention=LogRetention(settings.log_retain_entries, settings.log_retain_seconds),
        )

    # --- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Check the store, recover every model, create the default one if needed, then follow."""
        await self._open_store()
        position = await self.store.control_position()
        records = await self.store.load_models()
        await self._warm_up(
            [r.config for r in records]
            + ([dict(self.settings.default_model)] if self.settings.default_model else [])
        )
        for record in records:
            await self._install(record)
        default = self.settings.default_model
        if default is not None:
            spec = dict(default)
            name = str(spec.pop("name", "default"))
            if name not in self.replicas and name not in self.failed:
                await self.put_model(name, ModelConfig.model_validate(spec))
        self._tasks = [
            asyncio.create_task(self._follow_control(position), name="control"),
            asyncio.create_task(self._maintain(), name="maintenance"),
        ]
        self.ready = True

    async def stop(self) -> None:
        """Stop following; the lease holders checkpoint their models (a clean shutdown)."""
        self.ready = False
        self._stopping = True
        control, maintenance = self._tasks or (None, None)
        shutting_down = ModelUnavailable("model", "the service is shutting down")

        async def stop(replica: ModelReplica) -> None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(replica.stop(shutting_down, checkpoint=True), timeout=20)

        await asyncio.gather(
            finish(control, 3.0),
            finish(maintenance, 1.0, cancel_first=True),
            *(stop(replica) for replica in list(self.replicas.values())),
        )

    async def _open_store(self) -> None:
        """The store's identity (written the first time); layout-1 models are migrated first."""
        await self.store.check_durability()
        identity = await check_store_identity(self.store, self.settings.store_epoch)
        if identity is None:
            await self._migrate_layout_1()
            identity = await self.store.identity(create=True)
        assert identity is not None
        log.info("store epoch %s (key layout %d)", identity.epoch, identity.layout)
        if identity.layout > 2:
            raise StoreError(
                f"the store has key layout {identity.layout}, written by a newer acog-service; "
                "this version reads layout 2"
            )
        self.identity = identity

    async def _migrate_layout_1(self) -> None:
        """Models of layout 1 get their own records; each log's sequence counter starts where its
        recovered state is (so no label is numbered twice)."""
        for record, last_generation in await self.store.legacy_models():
            replica = self._new_replica(record)
            if replica is None:
                continue
            await replica.start()
            if replica.status is Status.SERVING:
                await self.store.adopt_model(record, last_generation, replica.runtime.version)
            await replica.stop(ModelUnavailable("model", "migrated"))
        await self.store.finish_layout_migration()

    async def _warm_up(self, configs: Sequence[dict[str, Any]]) -> None:
        """Compile, or load from the kernel cache, every kernel these models need, before they serve:
        a request never waits for numba (a cold compile takes tens of seconds)."""
        targets = []
        for raw in configs:
            spec = {k: v for k, v in raw.items() if k != "name"}
            try:
                config = ModelConfig.model_validate(spec)
            except ValueError:
                continue  # refused later, where the model is loaded or created
            targets.append(config.learner_name(self.settings.memory_budget_bytes))
            if config.auto_members == "all":  # ACOG-diag over the quadratic features joins the members
                targets.append("quadratic")
        if not targets:
            return
        done = await asyncio.to_thread(warm_up, targets)
        if done.compiled:
            log.info(
                "compiled %d kernel specialisations for %s in %.1f s (loaded %d from the cache)",
                len(done.compiled),
                ", ".join(done.algorithms),
                done.seconds,
                len(done.loaded),
            )

    def _new_replica(self, record: ModelRecord) -> ModelReplica | None:
        try:
            config = ModelConfig.model_validate(record.config)
            return ModelReplica(
                record.name, record.generation, config, self.store, self._replica_settings, self.observer
            )
        except Exception as exc:
            reason = f"stored configuration cannot be loaded: {exc}"
            self.failed[record.name] = FailedModel(record.name, record.generation, reason)
            log.error("model %s: %s", record.name, reason)
            return None

    async def _install(self, record: ModelRecord) -> None:
        """Serve ``record``'s generation here, replacing an older one (no-op if as new or newer)."""
        async with self._lock:
            current = self.replicas.get(record.name)
            failed = self.failed.get(record.name)
            known = current.generation if current else (failed.generation if failed else 0)
            if known >= record.generation:
                return
            self.failed.pop(record.name, None)
            replica = self._new_replica(record)
            if replica is not None:
                await self._warm_up([record.config])
                await replica.start()
                self.replicas[record.name] = replica
            else:
                self.replicas.pop(record.name, None)
            if current is not None:
                await current.stop(ModelGone("model", f"model {record.name!r} was replaced meanwhile"))
            self.observer.model_added(record.name)

    async def _remove(self, name: str, generation: int | None) -> None:
        """Stop serving ``name`` here (deleted), if this replica's generation is not newer."""
        async with self._lock:
            current = self.replicas.get(name)
            if current is not None and (generation is None or current.generation <= generation):
                del self.replicas[name]
                await current.stop(ModelGone("model", f"model {name!r} was deleted meanwhile"))
                self.observer.model_removed(name)
            failed = self.failed.get(name)
            if failed is not None and (generation is None or failed.generation <= generation):
                del self.failed[name]

    async def _follow_control(self, position: str) -> None:
        """Apply life-cycle events as they come; reconcile with the records now and then."""
        reconcile_at = time.monotonic() + RECONCILE_SECONDS
        backoff = 0.05
        while not self._stopping:
            try:
                for event in await self.store.follow_control(position, 1.0):
                    position = event.event_id
                    await self._on_control(event)
                if time.monotonic() >= reconcile_at:
                    await self.reconcile()
                    reconcile_at = time.monotonic() + RECONCILE_SECONDS
                backoff = 0.05
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                reraise_cancellation()
                log.warning("following model changes failed (%s); retrying", exc)
                await asyncio.sleep(backoff)
                backoff = min(2.0, backoff * 2)

    async def _on_control(self, event: ControlEvent) -> None:
        if event.op == "put":
            await self.refresh_model(event.model)
        elif event.op == "delete":
            await self._remove(event.model, event.generation)
        else:
            replica = self.replicas.get(event.model)
            if replica is not None and replica.generation == event.generation:
                replica.request_checkpoint()

    async def refresh_model(self, name: str) -> None:
        """Bring ``name`` on this replica up to its stored record (install, replace or remove)."""
        record = await self.store.load_model(name)
        if record is None:
            await self._remove(name, None)
        else:
            await self._install(record)

    async def reconcile(self) -> None:
        """Compare every model here with the stored records, and fix what differs."""
        records = {r.name: r for r in await self.store.load_models()}
        for record in records.values():
            await self._install(record)
        for name in [n for n in [*self.replicas, *self.failed] if n not in records]:
            await self._remove(name, None)

    # --- models ---------------------------------------------------------------------------

    def check_config(self, config: ModelConfig, declared: bool = True) -> None:
        """Refuse a configuration that passes its schema but not the service's limits (``declared``:
        also one that sets a parameter its algorithm does not take, as a client's may)."""
        if config.dimension > self.settings.max_n_features:
            field = "n_features" if config.n_features is not None else "max_features"
            raise LimitExceeded(
                field,
                f"{config.dimension} is over the limit of {self.settings.max_n_features} (max_n_features)",
            )
        budget = self.settings.memory_budget_bytes
        refused = config.inapplicable(budget) if declared else []
        if refused:
            raise InvalidRequest(refused[0], f"is not a parameter of {config.resolved_algorithm(budget)}")
        try:
            config.build_learner(budget)
        except ValueError as exc:
            field, _, problem = str(exc).partition(": ")
            raise InvalidRequest(field if problem else "config", problem or str(exc)) from None

    async def put_model(self, name: str, config: ModelConfig, replace: bool = False) -> PutOutcome:
        """Create ``name``; or, when it exists: a new generation with ``replace``, else nothing if the
        configuration is the same, else :class:`ModelConflict`."""
        try:
            validate_model_name(name)
        except InvalidModelName as exc:
            raise InvalidRequest("name", str(exc)) from None
        self.check_config(config)
        pinned = config.pinned(self.settings.memory_budget_bytes).model_dump(mode="json")
        current = await self.store.load_model(name)
        if current is not None and not replace and current.config == pinned:
            await self._install(current)
            return "unchanged"
        if current is not None and not replace:
            raise ModelConflict(
                "name",
                f"model {name!r} exists (generation {current.generation}) with another configuration; "
                "PUT with ?replace=true to start a new generation that learns from scratch",
            )
        if current is None and len(self.replicas) + len(self.failed) >= self.settings.max_models:
            raise LimitExceeded(
                "name", f"the service holds its maximum of {self.settings.max_models} models (max_models)"
            )
        try:
            record = await self.store.put_model(
                name, pinned, time.time(), current.generation if current is not None else 0
            )
        except GenerationGone:
            raise ModelConflict("name", f"model {name!r} was changed meanwhile by another request") from None
        await self._install(record)
        if current is not None:
            with contextlib.suppress(StoreError):
                await self.store.delete_generation(name, current.generation)
        return "created" if current is None else "replaced"

    async def change_schema(self, name: str, request: SchemaChangeRequest) -> Applied | None:
        """Declare a change of model ``name``'s feature schema (:mod:`service.schema_change`): the
        change is planned against the names registered here, written to the model's log like a
        label, and answered once this replica applied it, so every replica and every recovery
        migrates at the same point of the log. The model keeps its generation and history.

        A retry of the same request on the same schema finds the first entry (the request id is a
        hash of the generation, the schema it was planned on and the change). A change that lands
        after another one (planned on a schema that is gone) applies as a no-op everywhere and is
        a 409: declare it again against the new schema."""
        replica = self._serving(name)
        runtime = replica.runtime
        try:
            change = plan(runtime.schema.config, runtime.registered_names(), request)
        except SchemaChangeError as exc:
            raise InvalidRequest(exc.field, exc.problem) from None
        self.check_config(change.config, declared=False)  # the model's own, with the new names
        body = runtime.schema_event(change)
        digest = hashlib.sha256(b"%d:" % replica.generation + body).hexdigest()[:32]
        try:
            applied = await replica.append_event(SCHEMA_EVENT, body, digest)
        except GenerationGone as exc:
            await self.refresh_model(name)
            raise ModelGone("model", f"model {name!r}: {exc}") from None
        if applied is not None and not applied.updated:
            raise ModelConflict(
                "model",
                f"the schema of model {name!r} changed while this change was declared (log entry "
                f"{applied.seq} applied as a no-op); declare it again against the current schema",
            )
        return applied

    async def delete_model(self, name: str) -> None:
        deleted = await self.store.delete_model(name)
        await self._remove(name, deleted)
        if deleted is None:
            raise UnknownModel("name", f"no model named {name!r}")

    def view(self, name: str, detail: bool = False) -> ModelView:
        """The read-only view of model ``name`` (``detail``: with its described state), or
        :class:`UnknownModel`."""
        replica = self.replicas.get(name)
        if replica is not None:
            return ModelView.of(replica, detail)
        failed = self.failed.get(name)
        if failed is not None:
            return ModelView.of_failed(failed)
        raise UnknownModel("name", f"no model named {name!r}")

    def views(self) -> list[ModelView]:
        """Every model on this replica, sorted by name."""
        return [self.view(name) for name in sorted({*self.replicas, *self.failed})]

    def _serving(self, name: str) -> ModelReplica:
        """The replica of ``name`` that can serve now, or the reason it cannot."""
        if self.store_lost is not None:
            raise StoreLost("store", self.store_lost)
        failed = self.failed.get(name)
        if failed is not None:
            raise ModelUnavailable("model", f"model {name!r} cannot serve: {failed.reason}")
        replica = self.replicas.get(name)
        if replica is None:
            raise UnknownModel("model", f"no model named {name!r}")
        replica.check_serving()
        return replica

    async def checkpoint(self, name: str) -> tuple[bool, int]:
        """Have a checkpoint of the current state written; ``(written, version)``."""
        replica = self._serving(name)
        version = replica.runtime.version
        return await replica.checkpoint(), version

    def _check_batch(self, field: str, size: int, what: str) -> None:
        if size > self.settings.max_batch:
            raise LimitExceeded(
                field, f"{size} {what}, over the limit of {self.settings.max_batch} (max_batch)", 413
            )

    # --- predictions ----------------------------------------------------------------------

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
        replica = self.replicas.get(model)
        return "plus_minus_one" if replica is None else replica.config.label_format

    async def predict(self, model: str | None, instances: Sequence[Any]) -> tuple[list[Prediction], bool]:
        """Score every instance; returns the predictions and whether they were stored."""
        model = self.resolve_model(model)
        replica = self._serving(model)
        runtime = replica.runtime
        self._check_batch("instances", len(instances), "instances")
        parsed = []
        for i, features in enumerate(instances):
            field = "features" if len(instances) == 1 else f"instances[{i}].features"
            parsed.append(self._parse(replica, features, field))
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
            pid = make_prediction_id(model, replica.generation, now)
            pending.append(PendingPrediction(pid, example, label, score, now))
            ignored = runtime.features.unregistrable(example.names or ())
            out.append(Prediction(pid, label, score, model, version, ignored))
        stored = True
        try:
            await replica.put_pending(pending)
        except PendingLimitExceeded as exc:
            self.observer.predictions_refused(model, "pending_limit", len(out))
            raise LimitExceeded("instances", f"{exc} (max_pending_per_model)") from None
        except StoreError:  # unavailable, or a write Redis refused (a full disk): answer from memory
            if not self.settings.predict_when_store_down:
                raise
            stored = False
        anomalies = sum(p.label == 1 for p in out)
        self.observer.predictions(model, anomalies, len(out) - anomalies)
        n_ignored = sum(len(p.ignored) for p in out)
        if n_ignored:
            self.observer.features_ignored(model, "predict", n_ignored)
        return out, stored

    def _parse(
        self, replica: ModelReplica, features: Any, field: str, labelled: bool = False
    ) -> tuple[Example, SparseVector]:
        """One instance's example and vector, or the refusal naming the field (counted as a
        refused label for a ``labelled`` example, else as a refused prediction)."""
        runtime = replica.runtime
        try:
            example, vector = runtime.features.parse(features, field)
        except FeatureError as exc:
            self._features_refused(replica.name, labelled)
            raise InvalidRequest(exc.field, exc.problem) from None
        bound = self.settings.max_feature_value
        if (
            runtime.config.normalize == "none"
            and example.values.size
            and np.abs(example.values).max() > bound
        ):
            self._features_refused(replica.name, labelled)
            raise LimitExceeded(
                field,
                f"has a value of absolute size over {bound:g} (max_feature_value), which a model "
                'with normalize: "none" cannot learn from without overflow',
            )
        return example, vector

    def _features_refused(self, model: str, labelled: bool) -> None:
        if labelled:
            self.observer.rejected(model, "invalid_features")
        else:
            self.observer.predictions_refused(model, "invalid_features")

    # --- labels ---------------------------------------------------------------------------

    def _label(self, replica: ModelReplica, raw: Any, field: str) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise InvalidRequest(field, f"must be a number, got {raw!r}")
        if replica.config.label_format == "zero_one":
            if raw in (0, 1):
                return 1 if raw == 1 else -1
            raise InvalidRequest(field, f"must be 0 or 1 for model {replica.name!r}, got {raw!r}")
        if raw in (-1, 1):
            return int(raw)
        raise InvalidRequest(field, f"must be -1 or +1 for model {replica.name!r}, got {raw!r}")

    async def _generation_gone(self, model: str, generation: int) -> str | None:
        """Why a prediction's generation no longer exists, if it ever existed: replaced, or deleted."""
        replica = self.replicas.get(model)
        if replica is not None and generation < replica.generation:
            return (
                f"made by generation {generation} of model {model!r}, since replaced by generation "
                f"{replica.generation}"
            )
        if replica is None and model not in self.failed:
            record = await self.store.load_model(model)
            if record is not None:
                await self._install(record)
                return await self._generation_gone(model, generation) if model in self.replicas else None
            if 0 < generation <= await self.store.last_generation(model):
                return f"made by generation {generation} of model {model!r}, which was deleted"
        return None

    async def feedback(self, items: Sequence[tuple[str, Any]]) -> list[FeedbackResult]:
        """Labels for earlier predictions. Invalid labels refuse the whole request (nothing
        applied); ids that cannot be resolved get a per-item error."""
        results: list[FeedbackResult | None] = [None] * len(items)
        groups: dict[str, list[tuple[int, str, int]]] = {}
        batch = len(items) > 1
        self._check_batch("items", len(items), "labels")
        if self.store_lost is not None:
            raise StoreLost("store", self.store_lost)
        for i, (pid, raw) in enumerate(items):
            prefix = f"items[{i}]." if batch else ""
            try:
                parsed = parse_prediction_id(pid)
            except PredictionIdError:
                problem = f"{pid!r} is not a prediction id this service issued"
                error = UnknownPrediction(f"{prefix}prediction_id", problem, "unknown")
                results[i] = FeedbackResult(pid, None, error=error)
                continue
            model = parsed.model
            if model in self.replicas and parsed.generation > self.replicas[model].generation:
                await self.refresh_model(model)  # a generation this replica has not heard of yet
            if model in self.failed:
                problem = f"model {model!r} cannot serve: {self.failed[model].reason}"
                results[i] = FeedbackResult(pid, model, error=ModelUnavailable("model", problem))
                continue
            gone = await self._generation_gone(model, parsed.generation)
            if gone is not None:
                results[i] = FeedbackResult(pid, model, error=ModelGone(f"{prefix}prediction_id", gone))
                continue
            replica = self.replicas.get(model)
            if replica is None or parsed.generation != replica.generation:  # never issued by any generation
                problem = f"{pid!r} is unknown: model {model!r} never issued it"
                error = UnknownPrediction(f"{prefix}prediction_id", problem, "unknown")
                results[i] = FeedbackResult(pid, model, error=error)
                continue
            try:
                label = self._label(replica, raw, f"{prefix}label")
            except InvalidRequest:  # refuses the whole request: nothing applied yet
                self.observer.rejected(model, "invalid_label")
                raise
            groups.setdefault(model, []).append((i, pid, label))
        for model in groups:
            self._serving(model)
        answers = await asyncio.gather(
            *(self._label_group(m, [(pid, y) for _, pid, y in members]) for m, members in groups.items())
        )
        for (model, members), answer in zip(groups.items(), answers, strict=True):
            for (i, pid, _), item in zip(members, answer, strict=True):
                prefix = f"items[{i}]." if batch else ""
                results[i] = self._result(model, pid, item, prefix)
        for r in results:
            if r is None or r.model is None or r.model not in self.replicas:
                continue
            if r.duplicate:
                self.observer.rejected(r.model, "duplicate")
            elif r.error is not None:
                self.observer.rejected(r.model, r.error.reason)
            elif r.ignored:
                self.observer.features_ignored(r.model, "label", len(r.ignored))
        return [r for r in results if r is not None]

    async def _label_group(self, model: str, items: list[tuple[str, int]]) -> list[LabelAnswer | EngineError]:
        replica = self.replicas[model]
        try:
            return list(await replica.label(items))
        except GenerationGone as exc:
            await self.refresh_model(model)
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
            replica = self.replicas.get(model)
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
        replica = self._serving(model)
        self._check_batch("items", len(items), "examples")
        batch = len(items) > 1
        parsed = []
        for i, (features, raw) in enumerate(items):
            prefix = f"items[{i}]." if batch else ""
            example, _ = self._parse(replica, features, f"{prefix}features", labelled=True)
            try:
                label = self._label(replica, raw, f"{prefix}label")
            except InvalidRequest:
                self.observer.rejected(model, "invalid_label")
                raise
            parsed.append((example, label))
        try:
            appended = await replica.append_examples(parsed)
        except GenerationGone as exc:
            await self.refresh_model(model)
            raise ModelGone("model", f"model {model!r}: {exc}") from None
        results = [_example_result(model, pid, applied) for pid, applied in appended]
        ignored = sum(len(r.ignored) for r in results)
        if ignored:
            self.observer.features_ignored(model, "label", ignored)
        return results

    # --- maintenance ----------------------------------------------------------------------

    async def _maintain(self) -> None:
        while True:
            await asyncio.sleep(self.settings.maintenance_interval_seconds)
            try:
                await self.maintain_once()
            except StoreUnavailable as exc:
                reraise_cancellation()
                log.warning("maintenance skipped: %s", exc)
            except Exception:
                reraise_cancellation()
                log.exception("maintenance failed")

    async def maintain_once(self) -> None:
        await self.check_identity()
        now = time.time()
        for name, replica in list(self.replicas.items()):
            expired = await self.store.sweep_expired(name, replica.generation, now)
            if expired:
                self.observer.expired(name, expired)
            replica.pending_count = await self.store.count_pending(name, replica.generation, now)

    async def check_identity(self) -> None:
        """Refuse to go on with a store that is not the one this engine started on (a Redis that
        restarted empty, or was flushed): its models and logs are gone."""
        identity = await self.store.identity(create=False)
        if self.identity is not None and identity != self.identity:
            found = "no identity at all" if identity is None else f"epoch {identity.epoch}"
            self.store_lost = (
                f"the store lost its data: it was epoch {self.identity.epoch} when this process started "
                f"and now has {found} (a Redis restarted without persistence, or flushed). Nothing is "
                "served into it; restore its data, or restart the service to start afresh"
            )
            log.critical("%s", self.store_lost)

    async def ping(self) -> None:
        await self.store.ping()


async def check_store_identity(store: ModelStore, expected_epoch: str | None) -> StoreIdentity | None:
    """The store's identity (None: a new store, or one of layout 1 to migrate), or a
    :class:`StoreError` for a store that lost its data: another epoch or none where
    ``expected_epoch`` (``ACOG_STORE_EPOCH``) is set, or no identity but ``acog:*`` keys left."""
    identity = await store.identity(create=False)
    if expected_epoch is not None and (identity is None or identity.epoch != expected_epoch):
        found = "no epoch at all" if identity is None else f"epoch {identity.epoch}"
        raise StoreError(
            f"the store is not the one this service expects: ACOG_STORE_EPOCH is {expected_epoch} and "
            f"the store has {found}. It lost its data (a Redis restarted without persistence, or "
            "flushed) or it is another store; restore its data, or unset ACOG_STORE_EPOCH to start afresh"
        )
    if identity is None and not await store.legacy_models():
        leftover = await store.leftover_key()
        if leftover is not None:
            raise StoreError(
                f"the store lost part of its data: it has no identity but still holds {leftover!r} (keys "
                "evicted under maxmemory, or a partial restore). Restore its data, or delete the acog:* "
                "keys to start afresh"
            )
    return identity


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
