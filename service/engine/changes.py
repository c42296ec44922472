"""Changes to the models: create, replace and delete (through the store, which announces them on
the control stream), a change of a model's feature schema, and a checkpoint on request.

Every change is checked against the service's limits first (:meth:`ModelChanges.check_config`);
the change is then written to the store, and this process installs its result at once (the
others follow the control stream, :mod:`service.engine.registry`).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from typing import Literal

from model_store import GenerationGone, InvalidModelName, ModelRegistry, StoreError, validate_model_name

from ..model_config import ModelConfig
from ..schema_change import EVENT_KIND as SCHEMA_EVENT
from ..schema_change import SchemaChangeError, SchemaChangeRequest, plan
from ..settings import Settings
from .errors import InvalidRequest, LimitExceeded, ModelConflict, ModelGone, UnknownModel
from .registry import Registry
from .runtime import Applied

PutOutcome = Literal["created", "replaced", "unchanged"]


class ModelChanges:
    """Create, replace, delete and re-schema models; see the module docstring."""

    def __init__(self, store: ModelRegistry, settings: Settings, registry: Registry) -> None:
        self.store = store
        self.settings = settings
        self.registry = registry

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

    async def put_model(
        self, name: str, config: ModelConfig, replace: bool = False, if_generation: int | None = None
    ) -> PutOutcome:
        """Create ``name``; or, when it exists: a new generation with ``replace``, else nothing if the
        configuration is the same, else :class:`ModelConflict`.

        ``if_generation``: the change is meant for that generation. When the model is at another one,
        it is nothing if the model already has this configuration (a retried replace that landed
        answers the generation it made), else :class:`ModelConflict`."""
        try:
            validate_model_name(name)
        except InvalidModelName as exc:
            raise InvalidRequest("name", str(exc)) from None
        self.check_config(config)
        pinned = config.pinned(self.settings.memory_budget_bytes).model_dump(mode="json")
        current = await self.store.load_model(name)
        if if_generation is not None and (current is None or current.generation != if_generation):
            if current is not None and current.config == pinned:
                await self.registry.install(current)
                return "unchanged"
            found = "does not exist" if current is None else f"is at generation {current.generation}"
            raise ModelConflict(
                "if_generation",
                f"model {name!r} {found}, not generation {if_generation}, with another configuration",
            )
        if current is not None and not replace and current.config == pinned:
            await self.registry.install(current)
            return "unchanged"
        if current is not None and not replace:
            raise ModelConflict(
                "name",
                f"model {name!r} exists (generation {current.generation}) with another configuration; "
                "PUT with ?replace=true to start a new generation that learns from scratch",
            )
        held = len(self.registry.replicas) + len(self.registry.failed)
        if current is None and held >= self.settings.max_models:
            raise LimitExceeded(
                "name", f"the service holds its maximum of {self.settings.max_models} models (max_models)"
            )
        try:
            record = await self.store.put_model(
                name, pinned, time.time(), current.generation if current is not None else 0
            )
        except GenerationGone:
            raise ModelConflict("name", f"model {name!r} was changed meanwhile by another request") from None
        await self.registry.install(record)
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
        a conflict: declare it again against the new schema."""
        replica = self.registry.serving(name)
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
            await self.registry.refresh_model(name)
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
        await self.registry.remove(name, deleted)
        if deleted is None:
            raise UnknownModel("name", f"no model named {name!r}")

    async def checkpoint(self, name: str) -> tuple[bool, int]:
        """Have a checkpoint of the current state written; ``(written, version)``."""
        replica = self.registry.serving(name)
        version = replica.runtime.version
        return await replica.checkpoint(), version
