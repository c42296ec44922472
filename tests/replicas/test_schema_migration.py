"""A declared schema change on real servers: a model learns on the old schema, a migration
is declared on one replica, labels arrive on the new schema through the other. The served
predictions equal the library fed the same schedule (learner, feature space and schema history of
:mod:`service.schema_history`), the replica and a process started after both were killed agree bit
for bit, and a request on the old schema is a 422 naming the vanished features."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from service.learners import OnlineLearner
from service.model_config import ModelConfig
from service.schema_change import SchemaChange, SchemaChangeRequest, plan
from service.schema_history import SchemaHistory

from .fleet import call, fleet, wait_for_version

OLD = [f"f{i}" for i in range(8)]
NEW = [*OLD[2:], "g0", "g1"]
CHANGE = {"vanished": ["f0", "f1"], "augmented": ["g0", "g1"]}
ENV = {"ACOG_CHECKPOINT_EVERY_EVENTS": "25", "ACOG_CHECKPOINT_EVERY_SECONDS": "3600"}


class Library:
    """What the service must compute, from the library alone: labels and the change, in log order."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.history = SchemaHistory(ModelConfig.model_validate(config))
        self.learner: OnlineLearner = self.history.config.build_learner()
        self.features = self.history.feature_space()
        self.version = self.labels = 0

    def label(self, features: dict[str, float], y: int) -> None:
        example, _ = self.features.parse(features)
        self.learner.learn(self.features.vector(example), y)
        self.version += 1
        self.labels += 1

    def change(self, request: dict[str, Any]) -> None:
        assert self.features.registry is not None
        change = plan(self.history.config, self.features.registry.names, SchemaChangeRequest(**request))
        change = SchemaChange.from_json(change.to_json())
        self.version += 1
        self.learner, self.features = self.history.apply(change, self.learner, self.version, self.labels)

    def scores(self, probe: list[dict[str, float]]) -> list[float]:
        return [self.learner.score(self.features.parse(p)[1]) for p in probe]


def rows(names: list[str], n: int, seed: int) -> tuple[list[dict[str, float]], list[int]]:
    rng = np.random.default_rng(seed)
    truth = {
        name: w for name, w in zip([*OLD, "g0", "g1"], np.random.default_rng(0).normal(size=10), strict=True)
    }
    X = [
        {name: float(v) for name, v in zip(names, rng.normal(size=len(names)), strict=True)} for _ in range(n)
    ]
    y = [1 if sum(truth[k] * v for k, v in x.items()) > 0.3 else -1 for x in X]
    return X, y


def learn(replica: Any, model: str, X: list[dict[str, float]], y: list[int], library: Library) -> None:
    predictions = call(replica, "POST", "/predict", {"model": model, "instances": X})["predictions"]
    items = [
        {"prediction_id": p["prediction_id"], "label": label} for p, label in zip(predictions, y, strict=True)
    ]
    results = call(replica, "POST", "/feedback", {"items": items})["results"]
    assert [r["model_version"] for r in results] == list(
        range(library.version + 1, library.version + len(y) + 1)
    )
    for x, label in zip(X, y, strict=True):
        library.label(x, label)


def scores(replica: Any, model: str, probe: list[dict[str, float]]) -> list[float]:
    return [
        p["score"]
        for p in call(replica, "POST", "/predict", {"model": model, "instances": probe})["predictions"]
    ]


@pytest.mark.parametrize("algorithm", ["opid", "acog"])
def test_a_declared_migration_is_applied_alike_by_replicas_and_recovery(
    tmp_path: Path, single_redis: str, algorithm: str
) -> None:
    config = {"feature_names": OLD, "algorithm": algorithm}
    library = Library(config)
    X_old, y_old = rows(OLD, 70, seed=1)
    X_new, y_new = rows(NEW, 70, seed=2)
    probe, _ = rows(NEW, 15, seed=3)
    with fleet(tmp_path, single_redis, 2, ENV) as replicas:
        a, b = replicas.replicas
        call(a, "PUT", "/models/m", config)
        learn(a, "m", X_old, y_old, library)

        declared = call(a, "POST", "/models/m/schema", CHANGE)
        library.change(CHANGE)
        schema = declared["state"]["schema"]
        assert declared["generation"] == 1 and declared["state"]["version"] == 71
        assert (schema["vanished"], schema["augmented"]) == (["f0", "f1"], ["g0", "g1"])
        assert schema["survived"] == OLD[2:] and schema["labels_since_change"] == 0
        assert schema["feature_names"] == NEW
        if algorithm == "opid":
            assert schema["phase"] == "E"

        wait_for_version(b, "m", 71)
        stale = httpx.post(f"{b.url}/predict", json={"model": "m", "features": X_old[0]}, timeout=30)
        assert stale.status_code == 422, stale.text
        assert "'f0'" in stale.text and "'f1'" in stale.text and "vanished" in stale.text

        learn(b, "m", X_new, y_new, library)  # new-schema labels through the replica
        expected = library.scores(probe)
        wait_for_version(a, "m", 141)
        assert scores(a, "m", probe) == scores(b, "m", probe) == expected
        assert call(a, "GET", "/models/m")["state"]["schema"]["labels_since_change"] == 70

        again = httpx.post(f"{a.url}/models/m/schema", json=CHANGE, timeout=30)
        assert again.status_code == 422 and "vanished" in again.text  # f0 is no longer in the schema

        replicas.kill(a)
        replicas.kill(b)
        fresh = replicas.add()  # checkpoints straddle the change: it recovers from one, replays the rest
        assert scores(fresh, "m", probe) == expected
        info = call(fresh, "GET", "/models/m")
        assert info["state"]["version"] == 141 and info["state"]["schema"]["changes"] == 1


def test_an_index_schema_cannot_change(tmp_path: Path, single_redis: str) -> None:
    with fleet(tmp_path, single_redis, 1) as replicas:
        [a] = replicas.replicas
        call(a, "PUT", "/models/m", {"n_features": 4})
        refused = httpx.post(f"{a.url}/models/m/schema", json={"feature_names": ["a", "b"]}, timeout=30)
        assert refused.status_code == 422 and "n_features" in refused.text
        unknown = httpx.post(f"{a.url}/models/nope/schema", json={"feature_names": ["a"]}, timeout=30)
        assert unknown.status_code == 404
        assert call(a, "GET", "/models/m")["state"]["version"] == 0
