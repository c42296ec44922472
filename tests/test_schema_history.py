"""A model's log with a schema change in it, applied by a primary, a replica and a recovering process:
all three end in the same bits (service.schema_history, without the engine).

Each "process" applies the same entries in the same order: labels (a named example and its label)
and one ``schema`` event. The recovering one checkpoints half-way (after the change), starts from
that checkpoint with the *original* configuration, as a restarted process does, and replays the rest.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from model_store import Example
from service.learners import OnlineLearner
from service.model_config import ModelConfig
from service.schema_change import SchemaChange, SchemaChangeRequest, plan
from service.schema_history import SchemaHistory

NAMES = [f"f{i}" for i in range(8)]
BUDGET = 512 * 2**20


def entries(seed: int) -> list[tuple[str, Any]]:
    """200 labels on f0..f7, then a change (f0, f1 vanish; g0, g1 come), then 200 labels on the new
    names, a few of them predicted before the change (they still carry f0)."""
    rng = np.random.default_rng(seed)
    truth = {n: rng.normal() for n in [*NAMES, "g0", "g1"]}
    out: list[tuple[str, Any]] = []

    def example(names: list[str]) -> tuple[Example, int]:
        values = rng.normal(size=len(names))
        score = sum(truth[n] * v for n, v in zip(names, values, strict=True))
        order = np.argsort(names)
        return Example.named(tuple(np.array(names)[order]), values[order]), 1 if score > 0.3 else -1

    for _ in range(200):
        out.append(("label", example(NAMES)))
    out.append(("schema", SchemaChangeRequest(vanished=["f0", "f1"], augmented=["g0", "g1"])))
    new = [*NAMES[2:], "g0", "g1"]
    for i in range(200):
        out.append(("label", example(NAMES if i < 5 else new)))
    return out


class Process:
    """What a runtime does with the entries, reduced to the learner, the features and the history."""

    def __init__(self, config: ModelConfig) -> None:
        self.history = SchemaHistory(config)
        self.learner: OnlineLearner = config.build_learner(BUDGET)
        self.features = self.history.feature_space()
        self.version = 0
        self.labels = 0

    def apply(self, kind: str, body: Any) -> None:
        self.version += 1
        if kind == "schema":
            registered = self.features.registry.names if self.features.registry else []
            change = plan(self.history.config, registered, body)
            change = SchemaChange.from_json(json.loads(json.dumps(change.to_json())))  # as logged
            self.learner, self.features = self.history.apply(change, self.learner, self.version, self.labels)
            return
        example, y = body
        self.learner.learn(self.features.vector(example), y)
        self.labels += 1

    def checkpoint(self) -> dict[str, Any]:
        registry = self.features.registry
        return {
            "learner": self.learner.to_state(),
            "schema": self.history.to_state(),
            "registry": None if registry is None else registry.to_state(),
            "version": self.version,
            "labels": self.labels,
        }

    @classmethod
    def restored(cls, config: ModelConfig, checkpoint: dict[str, Any]) -> Process:
        process = cls(config)
        process.history = SchemaHistory.from_state(checkpoint["schema"])
        process.learner = process.history.restore_learner(BUDGET, checkpoint["learner"])
        process.features = process.history.feature_space()
        if process.features.registry is not None:
            process.features.registry.load_state(checkpoint["registry"])
        process.version, process.labels = checkpoint["version"], checkpoint["labels"]
        return process


def same(a: Any, b: Any) -> bool:
    """The same bits: dicts and lists item by item, float arrays byte for byte (a NaN, such as a
    forest's unused fixed rho, equals itself), anything else by value."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and a and isinstance(a[0], dict | list | tuple | np.ndarray):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(map(same, a, b))
    x, y = np.asarray(a), np.asarray(b)
    if x.dtype.kind == "f":
        return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    return bool(np.array_equal(x, y))


@pytest.mark.parametrize(
    "config",
    [
        ModelConfig(feature_names=NAMES, algorithm="opid"),
        ModelConfig(max_features=12, algorithm="opid", opid={"gamma": 10.0}),
        ModelConfig(feature_names=NAMES, algorithm="acog"),  # the default model: eta=auto, loss=auto
    ],
    ids=["opid-closed", "opid-open", "acog-default"],
)
def test_primary_replica_and_recovery_end_in_the_same_bits(config: ModelConfig) -> None:
    log = entries(seed=7)
    primary, replica = Process(config), Process(config)
    half = None
    for k, (kind, body) in enumerate(log):
        primary.apply(kind, body)
        replica.apply(kind, body)
        if k == 300:
            half = primary.checkpoint()
    assert half is not None
    recovered = Process.restored(config, half)
    for kind, body in log[301:]:
        recovered.apply(kind, body)
    final = primary.learner.to_state()
    assert same(final, replica.learner.to_state())
    assert same(final, recovered.learner.to_state())
    x = {n: 0.5 for n in [*NAMES[2:], "g0", "g1"]}
    scores = {p.learner.score(p.features.parse(x)[1]) for p in (primary, replica, recovered)}
    assert len(scores) == 1
    facts = primary.history.describe(primary.learner, primary.labels)
    assert facts["changes"] == 1 and facts["vanished"] == ["f0", "f1"] and facts["augmented"] == ["g0", "g1"]
    assert facts["labels_since_change"] == 200 and facts["last_change_version"] == 201
    if config.algorithm == "opid":
        assert facts["phase"] == "E" and primary.learner.describe()["opid"]["refits"] == 3
