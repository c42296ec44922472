"""Challengers of a model (:mod:`service.challengers`): added, removed and promoted through the
model's label log, so that every replica holds the same ones in the same state.

Started from the log (``start: "log"``), the challenger is built here: this process reads the
current generation's log from its oldest retained entry to its end, waits until its own replica has
applied that far (so the feature registry maps every name the history holds), replays the labels
after the last declared schema change in a worker thread, and appends the adding entry with the
challenger's state as a compare-and-append after the last entry read. When labels arrived meanwhile
(the append is refused, nothing written), it reads and replays just those and tries again, up to
``HISTORY_ATTEMPTS`` times; then the request is answered 503 (retry). A history trimmed while it is
read is read again from its new start.

Promoting writes a new generation (as a rollback does, :mod:`service.engine.rollback`): the
challenger's state as this replica holds it once the promoting entry is applied (taken at once,
between two applications, so at an exact log position), with the challenger's configuration,
written with its record in one store script. Labels acknowledged into the old generation after
that position are not carried (they go with it, like a replacement's); the other challengers do not
follow either (add them again).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import time
from collections.abc import Awaitable, Callable

from model_store import GenerationGone, LogEntry, LogMoved, ModelRecord, ModelStore, StoreError, encode_state

from ..challengers import (
    CHALLENGER_EVENT,
    ID_PATTERN,
    MAX_STATE_BYTES,
    SHARED_FIELDS,
    START_LOG,
    START_NOW,
    Challenger,
    config_json,
    different_fields,
    put_body,
    replay,
    served_to,
)
from ..learners.inputs import SparseVector
from ..measures import Objective, WindowedMeasures
from ..model_config import ModelConfig
from ..schema_change import EVENT_KIND as SCHEMA_EVENT
from ..settings import Settings
from .checkpoint import Snapshot
from .errors import (
    InvalidRequest,
    LimitExceeded,
    ModelConflict,
    ModelGone,
    ModelUnavailable,
    TooLarge,
    UnknownModel,
)
from .follower import READ_BATCH
from .replica import ModelReplica
from .runtime import Applied

HISTORY_ATTEMPTS = 5
"""Compare-and-appends tried for a challenger started from the log before answering 503."""


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

    async def put(self, name: str, challenger: str, config: ModelConfig, start: str = START_NOW) -> None:
        """Add ``challenger`` to model ``name`` (or replace it, afresh, with another configuration),
        learning from the next label on, or (``start`` ``"log"``) first from the retained history."""
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
        header = {"op": "put", "id": challenger, "config": pinned.model_dump_json(), "limit": limit}
        current = runtime.challengers.get(challenger)
        same = current is not None and current.config_text == config_json(
            ModelConfig.model_validate_json(str(header["config"]))
        )  # the same configuration again changes nothing, wherever it started
        if start == START_LOG and not same:
            applied = await self._put_from_log(replica, header)
        else:
            applied = await self._append(replica, put_body(header))
        if applied is not None and not applied.updated:
            raise LimitExceeded(
                "challenger", f"model {name!r} reached its maximum of {limit} challengers meanwhile"
            )

    async def delete(self, name: str, challenger: str) -> None:
        replica = self.serving(name)
        if challenger not in replica.runtime.challengers:
            raise _unknown(name, challenger)
        await self._append(replica, put_body({"op": "delete", "id": challenger}))

    async def promote(self, name: str, challenger: str) -> ModelRecord:
        """Make ``challenger`` the model: a new generation with its configuration and state."""
        replica = self.serving(name)
        if challenger not in replica.runtime.challengers:
            raise _unknown(name, challenger)
        generation = replica.generation
        record = await self.store.load_model(name)
        if record is None or record.generation != generation:
            raise ModelConflict("model", f"model {name!r} was changed meanwhile by another request")
        await self._append(replica, put_body({"op": "promote", "id": challenger}))
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

    async def _put_from_log(self, replica: ModelReplica, header: dict[str, object]) -> Applied | None:
        """Build the challenger from the retained history and append it; see the module docstring."""
        config = ModelConfig.model_validate_json(str(header["config"]))
        built: Challenger | None = None
        after, last = "0-0", 0
        for _ in range(HISTORY_ATTEMPTS):
            entries = await self._read_history(replica, after, last)
            if entries is None:  # trimmed while read: from the new start
                built, after, last = None, "0-0", 0
                continue
            if entries:
                await replica.until_applied(int(entries[-1].seq or 0))
                after, last = entries[-1].stream_id, int(entries[-1].seq or 0)
            if self.serving(replica.name) is not replica:
                raise ModelConflict("model", f"model {replica.name!r} was changed meanwhile")
            # no await from here to the replay's vectors: the replica's features are those of `last`
            runtime = replica.runtime
            to_version = last or runtime.version  # an empty log: the replica's position is its end
            schema_changes = [k for k, e in enumerate(entries) if e.kind == SCHEMA_EVENT]
            if schema_changes:  # a challenger shares the current feature space: from the last change
                built, entries = None, entries[schema_changes[-1] + 1 :]
            labels = [
                (served_to(config, runtime.schema.config, runtime.features.known_vector(e.example)), e.y, seq)
                for e in entries
                if e.kind == "label" and e.example is not None and (seq := e.seq) is not None
            ]
            if built is None:
                built = Challenger.fresh(config, self.settings.memory_budget_bytes, 0)
                built.history = {"labels": 0, "from_version": None, "to_version": None}
            state = await asyncio.to_thread(_replayed, built, labels, to_version)
            try:
                return await self._append(replica, put_body(header, state), expected_seq=to_version)
            except LogMoved:
                continue  # labels came meanwhile: replay them too
        raise ModelUnavailable(
            "start", f'"log": labels kept coming faster than the history replayed ({HISTORY_ATTEMPTS} tries)'
        )

    async def _read_history(self, replica: ModelReplica, after: str, last: int) -> list[LogEntry] | None:
        """The log's entries after ``after`` (entry ``last``) to its end; None when they do not follow
        on from ``last`` (the log was trimmed past them meanwhile)."""
        out: list[LogEntry] = []
        while batch := await self.store.read_log(replica.name, replica.generation, after, READ_BATCH):
            for entry in batch:
                if entry.seq is None:
                    raise ModelConflict("start", '"log": the log predates sequence numbers; start from "now"')
                if last and entry.seq != last + 1:
                    return None
                out.append(entry)
                last = entry.seq
            after = batch[-1].stream_id
        return out

    async def _append(
        self, replica: ModelReplica, encoded: bytes, expected_seq: int | None = None
    ) -> Applied | None:
        # a retry of this request (same generation, same version seen) finds its entry
        key = b"%d:%d:" % (replica.generation, replica.runtime.version) + encoded
        request_id = hashlib.sha256(key).hexdigest()[:32]
        try:
            return await replica.append_event(CHALLENGER_EVENT, encoded, request_id, expected_seq)
        except GenerationGone as exc:
            raise ModelGone("model", f"model {replica.name!r}: {exc}") from None


def _replayed(challenger: Challenger, labels: list[tuple[SparseVector, int, int]], to_version: int) -> bytes:
    """Have ``challenger`` learn the history ``labels`` (up to entry ``to_version``); its encoded state."""
    replay(challenger, labels)
    challenger.since = to_version + 1
    challenger.history = {**(challenger.history or {}), "to_version": to_version}
    state = encode_state(challenger.to_state())
    if len(state) > MAX_STATE_BYTES:
        raise TooLarge(
            "start",
            f'"log": the challenger\'s state is {len(state)} bytes, more than the {MAX_STATE_BYTES} a log '
            'entry carries; start it from "now"',
        )
    return state


def _check_id(challenger: str) -> None:
    if not re.match(ID_PATTERN, challenger):
        raise InvalidRequest("challenger", f"must match {ID_PATTERN}, got {challenger!r}")


def _unknown(name: str, challenger: str) -> UnknownModel:
    return UnknownModel("challenger", f"model {name!r} has no challenger {challenger!r}")
