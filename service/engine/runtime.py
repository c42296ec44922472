"""One model in memory: its learner, measures and feature registry, and the position in its log.

Applying a label-log entry is the only way the state changes, and it is deterministic: the
same entries in the same order give bit-identical weights and measures, whichever process
applies them and however often it restarted (checkpoint + replay). ``version`` counts the
entries applied, so it is also the model's position in its log.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from model_store import LogEntry, parse_stream_id

from ..features import FeatureSpace
from ..learners import OnlineLearner
from ..learners.inputs import SparseVector
from ..measures import Measures, Objective, WindowedMeasures
from ..model_config import ModelConfig
from .checkpoint import Snapshot


@dataclass(frozen=True, slots=True)
class Applied:
    """What applying one entry did."""

    stream_id: str
    prediction_id: str
    y: int
    yhat: int
    updated: bool
    version: int
    delay: float
    update_seconds: float
    missing_share: float = 0.0
    """Share of the model's known features absent from the example."""


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
        self.features = FeatureSpace(config)
        objective = Objective(alpha_p=config.alpha_p, c_p=config.c_p)
        self.measures = Measures(objective)
        self.window = WindowedMeasures(window, objective)
        self.applied_id = "0-0"
        self.version = 0
        self.updates = 0
        self.checkpointed_version = 0
        self.checkpointed_at: float | None = None
        self.created_at = time.time()

    # --- serving --------------------------------------------------------------------------

    def score(self, vector: SparseVector) -> float:
        return self.learner.score(vector)

    def is_after(self, stream_id: str) -> bool:
        """Whether ``stream_id`` is later than everything applied so far."""
        return parse_stream_id(stream_id) > parse_stream_id(self.applied_id)

    def apply(self, entry: LogEntry) -> Applied:
        """Learn one logged label; entries must come in stream order, each once."""
        vector = self.features.vector(entry.example)
        yhat = entry.yhat if entry.yhat != 0 else self.learner.predict(vector)
        start = time.perf_counter()
        info = self.learner.learn(vector, entry.y)
        elapsed = time.perf_counter() - start
        self.measures.update(entry.y, yhat)
        self.window.update(entry.y, yhat)
        self.applied_id = entry.stream_id
        self.version += 1
        self.updates += info.updated
        return Applied(
            stream_id=entry.stream_id,
            prediction_id=entry.prediction_id,
            y=entry.y,
            yhat=yhat,
            updated=info.updated,
            version=self.version,
            delay=max(0.0, entry.labelled_at - entry.predicted_at),
            update_seconds=elapsed,
            missing_share=self.features.missing_share(entry.example),
        )

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
        )

    def restore(self, snapshot: Snapshot) -> None:
        """Load a checkpoint; every part is checked before any is replaced."""
        probe = type(self)(self.name, self.generation, self.config, self.memory_budget, self.window.size)
        probe.learner.load_state(snapshot.learner)
        probe.measures.load_state(snapshot.measures)
        probe.window.load_state(snapshot.window)
        if probe.features.registry is not None:
            if snapshot.registry is None:
                raise ValueError("checkpoint lacks the feature registry of a named model")
            probe.features.registry.load_state(snapshot.registry)
        self.learner, self.measures, self.window, self.features = (
            probe.learner,
            probe.measures,
            probe.window,
            probe.features,
        )
        self.applied_id = snapshot.applied_id
        self.version = snapshot.version
        self.updates = snapshot.updates
        self.checkpointed_version = snapshot.version
        self.checkpointed_at = snapshot.written_at

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
        }
        out.update(learner.describe())  # "eta" (the selection of eta="auto"), "sketch", ...
        if self.features.registry is not None:
            out["features_registered"] = len(self.features.registry.names)
        features = out.get("features")
        if features is not None:  # presence learners (OLI2DS) give feature slots: name them
            for entry in features["informativeness"]:
                entry["name"] = self.features.name_of(entry.pop("index"))
        return out
