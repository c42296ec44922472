"""A model's log entries other than labels, and the record of what applying an entry did.

The label log also carries events that change a model without a label: a declared schema change
(:mod:`service.schema_history`), a drift policy (:mod:`service.drift`) and challengers put, removed
or promoted (:mod:`service.challengers`). Each takes its place in the model's version like a
label, so every replica and every recovery applies it at the same point. :class:`LogEvents` holds
how each is applied, and the drift policy's response to a signal; :class:`ModelRuntime`
(:mod:`service.engine.runtime`) is the model these apply to.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from dataclasses import dataclass

from model_store import CodecError, LogEntry, decode_state

from ..challengers import CHALLENGER_EVENT, Challenger, config_json, different_fields, read_body
from ..drift import DRIFT_CHALLENGER, POLICIES, POLICY_EVENT, DriftMonitor
from ..features import FeatureSpace
from ..learners import OnlineLearner
from ..learners.inputs import SparseVector
from ..measures import Measures
from ..model_config import ModelConfig
from ..schema_change import EVENT_KIND as SCHEMA_EVENT
from ..schema_change import SchemaChange
from ..schema_history import SchemaHistory


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


class LogEvents:
    """How a model applies the log's events (the state is :class:`ModelRuntime`'s): each one moves
    the model's version by one, changed something (``updated``) or not."""

    name: str
    memory_budget: int
    learner: OnlineLearner
    schema: SchemaHistory
    features: FeatureSpace
    measures: Measures
    drift: DriftMonitor
    challengers: dict[str, Challenger]
    applied_id: str
    version: int
    recent: OrderedDict[int, Applied]

    def _apply_event(self, entry: LogEntry) -> Applied:
        """Apply the next entry, one that is not a label; raises :class:`UnknownEvent` for a kind
        this version cannot apply (nothing changes)."""
        if entry.kind == SCHEMA_EVENT:
            return self._change_schema(entry)
        if entry.kind == POLICY_EVENT:
            return self._set_drift_policy(entry)
        if entry.kind == CHALLENGER_EVENT:
            return self._change_challengers(entry)
        raise UnknownEvent(
            f"log entry {entry.stream_id} is a {entry.kind!r} event, which this service cannot apply"
        )

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
