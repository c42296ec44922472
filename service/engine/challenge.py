"""Challengers of a model (:mod:`service.challengers`): added, removed and promoted through the
model's label log, so that every replica holds the same ones in the same state.

Promoting writes a new generation (as a rollback does, :mod:`service.engine.rollback`): the
challenger's state as this replica holds it once the promoting entry is applied (taken at once,
between two applications, so at an exact log position), with the challenger's configuration,
written with its record in one store script. Labels acknowledged into the old generation after
that position are not carried (they go with it, like a replacement's); the other challengers do not
follow either (add them again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Awaitable, Callable

from model_store import GenerationGone, ModelRecord, ModelStore, StoreError

from ..challengers import CHALLENGER_EVENT, ID_PATTERN, SHARED_FIELDS, different_fields
from ..measures import Objective, WindowedMeasures
from ..model_config import ModelConfig
from ..settings import Settings
from .checkpoint import Snapshot
from .errors import InvalidRequest, LimitExceeded, ModelConflict, ModelGone, UnknownModel
from .replica import ModelReplica
from .runtime import Applied


class Challenges:
    """Put, delete and promote challengers; see the module docstring."""

    def __init__(
        self,
        store: ModelStore,
        settings: Settings,
        serving: Callable[[str], ModelReplica],
        install: Callable[[ModelRecord], Awaitable[None]],
        check_config: Callable[[ModelConfig], None],
    ) -> None:
        self.store = store
        self.settings = settings
        self.serving = serving
        self.install = install
        self.check_config = check_config

    async def put(self, name: str, challenger: str, config: ModelConfig) -> None:
        """Add ``challenger`` to model ``name`` (or replace it, afresh, with another configuration)."""
        _check_id(challenger)
        replica = self.serving(name)
        runtime = replica.runtime
        for field in different_fields(runtime.schema.config, config):
            raise InvalidRequest(
                field,
                f"must be the model's ({getattr(runtime.schema.config, field)!r}): a challenger shares the "
                f"model's feature space ({', '.join(SHARED_FIELDS)})",
            )
        self.check_config(config)
        limit = self.settings.max_challengers
        if challenger not in runtime.challengers and len(runtime.challengers) >= limit:
            raise LimitExceeded("challenger", f"model {name!r} has its maximum of {limit} (max_challengers)")
        pinned = config.pinned(self.settings.memory_budget_bytes)
        body = {"op": "put", "id": challenger, "config": pinned.model_dump_json(), "limit": limit}
        applied = await self._append(replica, body)
        if applied is not None and not applied.updated:
            raise LimitExceeded(
                "challenger", f"model {name!r} reached its maximum of {limit} challengers meanwhile"
            )

    async def delete(self, name: str, challenger: str) -> None:
        replica = self.serving(name)
        if challenger not in replica.runtime.challengers:
            raise _unknown(name, challenger)
        await self._append(replica, {"op": "delete", "id": challenger})

    async def promote(self, name: str, challenger: str) -> ModelRecord:
        """Make ``challenger`` the model: a new generation with its configuration and state."""
        replica = self.serving(name)
        if challenger not in replica.runtime.challengers:
            raise _unknown(name, challenger)
        generation = replica.generation
        record = await self.store.load_model(name)
        if record is None or record.generation != generation:
            raise ModelConflict("model", f"model {name!r} was changed meanwhile by another request")
        await self._append(replica, {"op": "promote", "id": challenger})
        # no await from here to the encoding: the follower cannot apply an entry in between
        runtime = replica.runtime
        chosen = runtime.challengers.get(challenger)
        if chosen is None or replica.generation != generation:
            raise ModelConflict("challenger", f"challenger {challenger!r} was removed meanwhile")
        config = chosen.config
        now = time.time()
        objective = Objective(alpha_p=config.alpha_p, c_p=config.c_p)
        registry = runtime.features.registry
        snapshot = Snapshot(
            generation=generation + 1,
            config_json=chosen.config_text,
            applied_id="0-0",
            version=0,
            updates=chosen.updates,
            written_at=now,
            learner=chosen.learner.to_state(),
            measures=chosen.measures.to_state(),
            window=WindowedMeasures(runtime.window.size, objective).to_state(),
            registry=None if registry is None else registry.to_state(),
            drift=chosen.drift.to_state(),
        )
        blob = snapshot.encode()
        try:
            new = await self.store.put_model_from_state(
                name, config.model_dump(mode="json"), now, generation, blob, now
            )
        except GenerationGone:
            raise ModelConflict("model", f"model {name!r} was changed meanwhile by another request") from None
        await self.install(new)
        with contextlib.suppress(StoreError):
            await self.store.delete_generation(name, generation)
        return new

    async def _append(self, replica: ModelReplica, body: dict[str, object]) -> Applied | None:
        encoded = json.dumps(body, sort_keys=True).encode()
        # a retry of this request (same generation, same version seen) finds its entry
        key = b"%d:%d:" % (replica.generation, replica.runtime.version) + encoded
        try:
            return await replica.append_event(CHALLENGER_EVENT, encoded, hashlib.sha256(key).hexdigest()[:32])
        except GenerationGone as exc:
            raise ModelGone("model", f"model {replica.name!r}: {exc}") from None


def _check_id(challenger: str) -> None:
    if not re.match(ID_PATTERN, challenger):
        raise InvalidRequest("challenger", f"must match {ID_PATTERN}, got {challenger!r}")


def _unknown(name: str, challenger: str) -> UnknownModel:
    return UnknownModel("challenger", f"model {name!r} has no challenger {challenger!r}")
