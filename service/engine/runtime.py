"""One model in memory: its learner, measures and feature registry, and the position in its log.

Applying a label-log entry is the only way the state changes, and it is deterministic: the
same entries in the same order give bit-identical weights and measures, whichever process
applies them and however often it restarted (checkpoint + replay). ``version`` counts the
entries applied, so it is also the model's position in its log: entry ``seq = version + 1``
is the only one that may come next. An entry further on means entries were missed (a gap),
which :meth:`ModelRuntime.apply` refuses with :class:`LogGap` instead of skipping them.

This module holds the model's state, a label's application, its checkpoint and its description;
the log's other entries (schema changes, drift policies, challengers) are applied by its base,
:class:`service.engine.log_events.LogEvents`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from model_store import LogEntry, parse_stream_id

from ..challengers import Challenger
from ..drift import DriftMonitor
from ..features import FeatureSpace
from ..learners import OnlineLearner
from ..learners.inputs import SparseVector
from ..measures import Measures, Objective, WindowedMeasures
from ..model_config import ModelConfig
from ..schema_history import SchemaHistory
from .checkpoint import Snapshot
from .log_events import RECENT, Applied, LogEvents, LogGap, LogRewound, UnknownEvent

__all__ = ["RECENT", "Applied", "LogGap", "LogRewound", "ModelRuntime", "UnknownEvent"]


class ModelRuntime(LogEvents):
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
        if entry.kind != "label":
            return self._apply_event(entry)
        if entry.example is None:
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
