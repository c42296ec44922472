"""The engine: this process's replicas of every model, over one store.

- ``predict`` (:mod:`.predictor`): parse and normalise, score ``mu . x`` now, keep the pending
  prediction (vector, predicted label, time) in the store under a new prediction id, answer.
- ``feedback`` (:mod:`.labels`): append the label to the model's log (the store checks the
  generation is current and numbers the entry), wait until this replica's follower has applied
  it, answer.
- model changes (:mod:`.changes`): create, replace and delete go through the store, which
  announces them on the control stream; every replica follows that stream (:mod:`.registry`), so
  a change made on one replica reaches all of them within a second.
- life (:mod:`.lifecycle`): recover every model at start (checkpoint, then the log after it), then
  follow; maintenance counts and sweeps pending predictions and checks that the store is still
  the one the engine started on (a Redis that lost its data is refused, not served into).

:class:`Engine` composes these parts and is what the API calls. Each model is one
:class:`~service.engine.replica.ModelReplica`; the API and the telemetry read them through
:class:`~service.engine.view.ModelView`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from model_store import ModelStore, StoreIdentity

from ..model_config import ModelConfig
from ..schema_change import SchemaChangeRequest
from ..settings import Settings
from .challenge import Challenges
from .changes import ModelChanges, PutOutcome
from .drift_policy import DriftPolicies
from .instances import InstanceReader
from .labels import FeedbackResult, LabelItem, LabelRouter
from .lifecycle import Lifecycle, replica_id
from .observer import Observer
from .predictor import Prediction, Predictor, Scored
from .registry import Registry, replica_settings
from .replica import ModelReplica
from .rollback import Rollbacks
from .runtime import Applied
from .view import FailedModel, ModelView


class Engine:
    """Every model of this process; see the module docstring."""

    def __init__(self, store: ModelStore, settings: Settings, observer: Observer | None = None) -> None:
        self.store = store
        self.settings = settings
        self.observer = observer or Observer()
        self.replica_id = replica_id()
        self.registry = Registry(store, settings, self.observer, replica_settings(self.replica_id, settings))
        self.changes = ModelChanges(store, settings, self.registry)
        self.lifecycle = Lifecycle(store, settings, self.observer, self.registry, self.changes)
        reader = InstanceReader(settings, self.observer)
        self.predictor = Predictor(settings, self.registry, reader, self.observer)
        self.labels = LabelRouter(settings, self.registry, reader, self.observer)
        self.rollbacks = Rollbacks(store, self.registry.serving, self.registry.install)
        self.drift_policies = DriftPolicies(self.registry.serving, settings.max_challengers)
        self.challenges = Challenges(
            store, settings, self.registry.serving, self.registry.install, self.changes.check_config
        )

    # --- state ----------------------------------------------------------------------------

    @property
    def replicas(self) -> dict[str, ModelReplica]:
        return self.registry.replicas

    @property
    def failed(self) -> dict[str, FailedModel]:
        return self.registry.failed

    @property
    def ready(self) -> bool:
        return self.lifecycle.ready

    @property
    def identity(self) -> StoreIdentity | None:
        return self.lifecycle.identity

    @property
    def store_lost(self) -> str | None:
        return self.registry.store_lost

    # --- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        await self.lifecycle.start()

    async def stop(self) -> None:
        await self.lifecycle.stop()

    async def maintain_once(self) -> None:
        await self.lifecycle.maintain_once()

    async def check_identity(self) -> None:
        await self.lifecycle.check_identity()

    async def ping(self) -> None:
        await self.store.ping()

    async def refresh_model(self, name: str) -> None:
        await self.registry.refresh_model(name)

    async def reconcile(self) -> None:
        await self.registry.reconcile()

    # --- models ---------------------------------------------------------------------------

    def check_config(self, config: ModelConfig, declared: bool = True) -> None:
        self.changes.check_config(config, declared)

    async def put_model(
        self, name: str, config: ModelConfig, replace: bool = False, if_generation: int | None = None
    ) -> PutOutcome:
        await self._check_store_before_writing()
        return await self.changes.put_model(name, config, replace, if_generation)

    async def change_schema(self, name: str, request: SchemaChangeRequest) -> Applied | None:
        await self._check_store_before_writing()
        return await self.changes.change_schema(name, request)

    async def delete_model(self, name: str) -> None:
        await self._check_store_before_writing()
        await self.changes.delete_model(name)

    async def checkpoint(self, name: str) -> tuple[bool, int]:
        await self._check_store_before_writing()
        return await self.changes.checkpoint(name)

    async def _check_store_before_writing(self) -> None:
        """Before a model change: :class:`StoreLost` when the store is not the one this engine started
        on (checked now, not only by the maintenance round: nothing is written into a store that
        lost its data, whose next start would then find leftover keys)."""
        if self.store_lost is None and self.identity is not None:
            await self.lifecycle.check_identity()
        self.registry.check_store()

    def view(self, name: str, detail: bool = False) -> ModelView:
        return self.registry.view(name, detail)

    def views(self) -> list[ModelView]:
        return self.registry.views()

    # --- predictions and labels -----------------------------------------------------------

    def resolve_model(self, model: str | None) -> str:
        return self.predictor.resolve_model(model)

    def label_format(self, model: str) -> str:
        return self.predictor.label_format(model)

    async def predict(self, model: str | None, instances: Sequence[Any]) -> tuple[list[Prediction], bool]:
        return await self.predictor.predict(model, instances)

    def start_predict(self, model: str | None, instances: Sequence[Any]) -> Scored:
        """:meth:`predict` in two steps: score now (refusals raise here) ..."""
        return self.predictor.start(model, instances)

    def finish_predict(self, scored: Scored) -> tuple[list[Prediction], bool]:
        """... and answer once ``scored.stored`` is done."""
        return self.predictor.finish(scored)

    async def feedback(self, items: Sequence[LabelItem]) -> list[FeedbackResult]:
        return await self.labels.feedback(items)

    async def feedback_examples(self, model: str, items: Sequence[tuple[Any, Any]]) -> list[FeedbackResult]:
        return await self.labels.feedback_examples(model, items)
