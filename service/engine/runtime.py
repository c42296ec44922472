"""One model in memory: its learner, measures and feature registry, and the position in its log.

Applying a label-log entry is the only way the state changes, and it is deterministic: the
same entries in the same order give bit-identical weights and measures, whichever process
applies them and however often it restarted (checkpoint + replay). ``version`` counts the
entries applied, so it is also the model's position in its log: entry ``seq = version + 1``
is the only one that may come next. An entry further on means entries were missed (a gap),
which :meth:`ModelRuntime.apply` refuses with :class:`LogGap` instead of skipping them.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from model_store import CodecError, LogEntry, decode_state, parse_stream_id

from ..challengers import CHALLENGER_EVENT, Challenger, config_json, different_fields, read_body
from ..drift import DRIFT_CHALLENGER, POLICIES, POLICY_EVENT, DriftMonitor
from ..features import FeatureSpace
from ..learners import OnlineLearner
from ..learners.inputs import SparseVector
from ..measures import Measures, Objective, WindowedMeasures
from ..model_config import ModelConfig
from ..schema_change import EVENT_KIND as SCHEMA_EVENT
from ..schema_change import SchemaChange
from ..schema_history import SchemaHistory
from .checkpoint import Snapshot


class LogGap(Exception):
    """The next entry is not ``version + 1``: entries between were trimmed or never read."""

    def __init__(self, name: str, expected: int, got: int) -> None:
        super().__init__(f"log entry {got} follows {expected - 1}; entries in between are missing")
        self.model = name
        self.expected = expected
        self.got = got


class LogRewound(Exception):
    """The log holds another entry at a position already applied here: the store lost its newest
    entries (a failover before they were replicated, a Redis restart that lost its last fsync) and
    went on numbering from where it was. The state here is ahead of the log."""

    def __init__(self, seq: int, applied_id: str, found_id: str) -> None:
        super().__init__(
            f"log entry {seq} is now {found_id}, but {applied_id} was applied at that position: the store "
            "lost entries from there on"
        )
        self.seq = seq


class UnknownEvent(Exception):
    """A log entry of a kind this version of the service cannot apply."""


RECENT = 65_536
"""How many recent applications a runtime remembers (so a retried label can be answered with the
first one's outcome)."""


@dataclass(frozen=True, slots=True)
class Applied:
    """What applying one entry did."""

    stream_id: str
    seq: int
    prediction_id: str
    y: int
    yhat: int
    updated: bool
    version: int
    delay: float
    update_seconds: float
    missing_share: float = 0.0
    """Share of the model's known features absent from the example."""
    kind: str = "label"
    """``label``, or the kind of event applied (``schema``: a declared schema change)."""
    ignored: tuple[str, ...] = ()
    """Feature names of the example that the model could not register (its ``max_features``
    slots are taken): they weigh nothing, now or later."""
    drift: bool = False
    """Whether the model's drift detector (:mod:`service.drift`) signalled on this label."""


class ModelRuntime:
    """A model's live state. Not thread-safe: the engine applies entries from one task."""

    def __init__(
        self, name: str, generation: int, config: ModelConfig, memory_budget: int, window: int
    ) -> None:
        self.name = name
        self.generation = generation
        self.config = config
        self.config_json = json.dumps(config.model_dump(mode="json"), sort_keys=True)
        self.memory_budget = memory_budget
        self.learner: OnlineLearner = config.build_learner(memory_budget)
        self.schema = SchemaHistory(config)
        """The current schema; ``config`` stays the generation's (checkpoints are checked against it)."""
        self.features = FeatureSpace(config)
        objective = Objective(alpha_p=config.alpha_p, c_p=config.c_p)
        self.measures = Measures(objective)
        self.window = WindowedMeasures(window, objective)
        self.drift = DriftMonitor(config.objective, config.alpha_p, config.c_p)
        self.challengers: dict[str, Challenger] = {}
        """Configurations learning in shadow from the same labels (:mod:`service.challengers`)."""
        self.applied_id = "0-0"
        self.version = 0
        self.updates = 0
        self.checkpointed_version = 0
        self.checkpointed_at: float | None = None
        self.created_at = time.time()
        self.recent: OrderedDict[int, Applied] = OrderedDict()

    # --- serving --------------------------------------------------------------------------

    def score(self, vector: SparseVector) -> float:
        """``mu . x`` of a vector the feature parser validated (not validated again)."""
        return self.learner.score_unchecked(vector)

    @property
    def eta(self) -> float:
        """The learning rate in use (NaN for a learner without one)."""
        return self.learner.eta

    def is_after(self, stream_id: str) -> bool:
        """Whether ``stream_id`` is later than everything applied so far."""
        return parse_stream_id(stream_id) > parse_stream_id(self.applied_id)

    def apply(self, entry: LogEntry) -> Applied | None:
        """Apply the next log entry. An entry applied already is skipped (None), unless the log now
        holds another entry at its position (:class:`LogRewound`); one further on than
        ``version + 1`` raises :class:`LogGap`. Either changes nothing. Entries of layout 1 carry
        no number: they follow in stream order."""
        if entry.seq is not None:
            if entry.seq <= self.version:
                seen = self.recent.get(entry.seq)
                if seen is not None and seen.stream_id != entry.stream_id:
                    raise LogRewound(entry.seq, seen.stream_id, entry.stream_id)
                return None
            if entry.seq != self.version + 1:
                raise LogGap(self.name, self.version + 1, entry.seq)
        elif not self.is_after(entry.stream_id):
            return None
        if entry.kind == SCHEMA_EVENT:
            return self._change_schema(entry)
        if entry.kind == POLICY_EVENT:
            return self._set_drift_policy(entry)
        if entry.kind == CHALLENGER_EVENT:
            return self._change_challengers(entry)
        if entry.kind != "label" or entry.example is None:
            raise UnknownEvent(
                f"log entry {entry.stream_id} is a {entry.kind!r} event, which this service cannot apply"
            )
        vector, ignored = self.features.vector_reporting(entry.example)
        # the example was validated when it was parsed, before it was logged: not again here
        yhat = entry.yhat if entry.yhat != 0 else (1 if self.learner.score_unchecked(vector) >= 0.0 else -1)
        start = time.perf_counter()
        info = self.learner.learn_unchecked(vector, entry.y)
        elapsed = time.perf_counter() - start
        self.measures.update(entry.y, yhat)
        self.window.update(entry.y, yhat)
        self.applied_id = entry.stream_id
        self.version += 1
        self.updates += info.updated
        drifted = self.drift.observe(entry.y, info.prediction, self.version)
        for name in sorted(self.challengers):
            challenger = self.challengers[name]
            challenger.learn(challenger.reads(self.schema.config, vector), entry.y, self.version)
        if drifted:
            self._respond_to_drift()
        applied = Applied(
            stream_id=entry.stream_id,
            seq=self.version,
            prediction_id=entry.prediction_id,
            y=entry.y,
            yhat=yhat,
            updated=info.updated,
            version=self.version,
            delay=max(0.0, entry.labelled_at - entry.predicted_at),
            update_seconds=elapsed,
            missing_share=self.features.missing_share(entry.example),
            ignored=ignored,
            drift=drifted,
        )
        return self._remember(applied)

    def _remember(self, applied: Applied) -> Applied:
        self.recent[applied.seq] = applied
        if len(self.recent) > RECENT:
            self.recent.popitem(last=False)
        return applied

    def registered_names(self) -> list[str]:
        """The named schema's names in index order (empty for an index schema)."""
        registry = self.features.registry
        return [] if registry is None else list(registry.names)

    def schema_event(self, change: SchemaChange) -> bytes:
        """The body of the log entry declaring ``change``, planned against the names registered now
        (``base``): where the entry lands after another change, it applies as a no-op."""
        return json.dumps({"change": change.to_json(), "base": self.registered_names()}).encode()

    @property
    def labels(self) -> int:
        """Labels applied (the log's entries less its other events; measures carry them across a
        rollback, which restarts the version)."""
        counts = self.measures.counts
        return counts.t_p + counts.t_n

    def _change_schema(self, entry: LogEntry) -> Applied:
        """Apply a declared schema change (:mod:`service.schema_history`): the learner migrates and
        the feature space becomes the new schema's. Nothing changes if the migration raises."""
        body = json.loads(entry.body)
        change = SchemaChange.from_json(body["change"])
        start = time.perf_counter()
        base = self.registered_names()
        applicable = base == list(body["base"])
        if applicable:  # else the schema changed between the plan and this entry: a no-op everywhere
            schema = SchemaHistory.from_state(self.schema.to_state())  # installed only on success
            learner, features = schema.apply(change, self.learner, self.version + 1, self.labels)
            self.learner, self.features, self.schema = learner, features, schema
            self.challengers.clear()  # their learners would need the same migration
        self.applied_id = entry.stream_id
        self.version += 1
        applied = Applied(
            stream_id=entry.stream_id,
            seq=self.version,
            prediction_id="",
            y=0,
            yhat=0,
            updated=applicable,
            version=self.version,
            delay=0.0,
            update_seconds=time.perf_counter() - start,
            kind=SCHEMA_EVENT,
        )
        return self._remember(applied)

    def _respond_to_drift(self) -> None:
        """The drift policy's response, right after the label that signalled (:mod:`service.drift`)."""
        if self.drift.policy == "reset":
            self.learner = self.schema.config.build_learner(self.memory_budget)
            self.drift.resets += 1
        elif self.drift.policy == "challenger" and (
            DRIFT_CHALLENGER in self.challengers or len(self.challengers) < self.drift.limit
        ):
            self.challengers[DRIFT_CHALLENGER] = Challenger.fresh(
                self.schema.config, self.memory_budget, self.version + 1
            )
            self.drift.resets += 1

    def _set_drift_policy(self, entry: LogEntry) -> Applied:
        """Apply a drift-policy entry (:mod:`service.drift`); an unknown policy is a no-op."""
        body = json.loads(entry.body)
        policy = body.get("on_drift")
        known = policy in POLICIES
        if known:
            self.drift.policy = policy
            self.drift.limit = int(body.get("limit", 0))
        return self._event_applied(entry, POLICY_EVENT, known)

    def shadow(self, vector: SparseVector, label: int) -> None:
        """Score a prediction's vector by every challenger (the champion answered ``label``)."""
        for challenger in self.challengers.values():
            challenger.shadow(challenger.reads(self.schema.config, vector), label)

    def _change_challengers(self, entry: LogEntry) -> Applied:
        """Apply a challenger entry: ``put`` (add, or replace with another configuration: afresh),
        ``delete``, or ``promote`` (a marker: the state is taken there). One that cannot apply here
        (over its limit, a configuration that does not fit, an unknown id) changes nothing."""
        body, state = read_body(entry.body)
        op, name = body.get("op"), str(body.get("id"))
        done = False
        if op == "put":
            done = self._put_challenger(name, str(body.get("config")), int(body.get("limit", 0)), state)
        elif op == "delete":
            done = self.challengers.pop(name, None) is not None
        elif op == "promote":
            done = name in self.challengers
        return self._event_applied(entry, CHALLENGER_EVENT, done)

    def _event_applied(self, entry: LogEntry, kind: str, updated: bool) -> Applied:
        """A log entry that carries no label (a drift policy, a challenger change) takes its place
        in the model's version, changed something (``updated``) or not."""
        self.applied_id = entry.stream_id
        self.version += 1
        applied = Applied(
            stream_id=entry.stream_id, seq=self.version, prediction_id="", y=0, yhat=0, updated=updated,
            version=self.version, delay=0.0, update_seconds=0.0, kind=kind,
        )  # fmt: skip
        return self._remember(applied)

    def _put_challenger(self, name: str, text: str, limit: int, state: bytes | None) -> bool:
        """Add or replace a challenger: afresh, or (started from the log) with the state the entry
        carries, which must be of this configuration and have learned the history up to the entry
        before this one."""
        try:
            config = ModelConfig.model_validate_json(text)
        except ValueError:
            return False
        current = self.challengers.get(name)
        if current is not None and current.config_text == config_json(config):
            return True  # the same configuration again: it goes on learning
        if current is None and len(self.challengers) >= limit:
            return False
        if different_fields(self.schema.config, config):
            return False
        try:
            if state is None:
                challenger = Challenger.fresh(config, self.memory_budget, self.version + 1)
            else:
                challenger = Challenger.from_state(decode_state(state), self.memory_budget)
                history = challenger.history or {}
                if challenger.config_text != config_json(config) or history.get("to_version") != self.version:
                    return False
                challenger.since = self.version + 1
        except (CodecError, ValueError, KeyError, TypeError):
            return False
        self.challengers[name] = challenger
        return True

    # --- checkpoints ----------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The state to checkpoint (copies)."""
        return self._snapshot(self.learner.to_state())

    @contextlib.contextmanager
    def borrowed_snapshot(self) -> Iterator[Snapshot]:
        """The state to checkpoint, sharing the learner's live arrays read-only: applying an
        entry raises ``StateBorrowed`` until the block ends (``OnlineLearner.borrowed_state``)."""
        with self.learner.borrowed_state() as learner:
            yield self._snapshot(learner)

    def _snapshot(self, learner: dict[str, Any]) -> Snapshot:
        registry = self.features.registry
        return Snapshot(
            generation=self.generation,
            config_json=self.config_json,
            applied_id=self.applied_id,
            version=self.version,
            updates=self.updates,
            written_at=time.time(),
            learner=learner,
            measures=self.measures.to_state(),
            window=self.window.to_state(),
            registry=None if registry is None else registry.to_state(),
            schema=self.schema.to_state() if self.schema.changed else None,
            drift=self.drift.to_state(),
            challengers={name: c.to_state() for name, c in self.challengers.items()} or None,
        )

    def restore(self, snapshot: Snapshot) -> None:
        """Load a checkpoint; every part is checked before any is replaced."""
        probe = type(self)(self.name, self.generation, self.config, self.memory_budget, self.window.size)
        if snapshot.schema is not None:
            probe.schema = SchemaHistory.from_state(snapshot.schema)
            probe.learner = probe.schema.restore_learner(self.memory_budget, snapshot.learner)
            probe.features = probe.schema.feature_space()
        else:
            probe.learner.load_state(snapshot.learner)
        probe.measures.load_state(snapshot.measures)
        probe.window.load_state(snapshot.window)
        if snapshot.drift is not None:  # else a checkpoint older than the detector: it starts afresh
            probe.drift.load_state(snapshot.drift)
        for name, state in (snapshot.challengers or {}).items():
            probe.challengers[name] = Challenger.from_state(state, self.memory_budget)
        if probe.features.registry is not None:
            if snapshot.registry is None:
                raise ValueError("checkpoint lacks the feature registry of a named model")
            probe.features.registry.load_state(snapshot.registry)
        self.learner, self.measures, self.window, self.features, self.schema, self.drift = (
            probe.learner,
            probe.measures,
            probe.window,
            probe.features,
            probe.schema,
            probe.drift,
        )
        self.challengers = probe.challengers
        self.applied_id = snapshot.applied_id
        self.version = snapshot.version
        self.updates = snapshot.updates
        self.checkpointed_version = snapshot.version
        self.checkpointed_at = snapshot.written_at
        self.recent.clear()

    def describe(self) -> dict[str, Any]:
        """Counts and measures for ``GET /models/{name}``."""
        learner = self.learner
        out: dict[str, Any] = {
            "algorithm": learner.algorithm,
            "version": self.version,
            "updates": self.updates,
            "applied_id": self.applied_id,
            "state_bytes": learner.state_nbytes(),
            "rho": learner.rho,
            "rho_estimate": self.measures.rho_estimate,
            "measures": self.measures.summary(),
            "window": {"size": self.window.size, **self.window.summary()},
            "checkpoint": {"version": self.checkpointed_version, "written_at": self.checkpointed_at},
            "drift": self.drift.describe(),
            "challengers": {n: c.describe(self.memory_budget) for n, c in sorted(self.challengers.items())},
        }
        out.update(learner.describe())  # "eta" (the selection of eta="auto"), "sketch", ...
        if self.features.registry is not None:
            out["features_registered"] = len(self.features.registry.names)
        if self.schema.changed or self.config.named:
            out["schema"] = {
                **self.schema.describe(self.learner, self.labels),
                "feature_names": self.registered_names(),
            }
        features = out.get("features")
        if features is not None:  # presence learners (OLI2DS) give feature slots: name them
            for entry in features["informativeness"]:
                entry["name"] = self.features.name_of(entry.pop("index"))
        return out
