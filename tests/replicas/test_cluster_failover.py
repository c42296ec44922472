"""A Redis Cluster failover with the model's replica lagging behind, under label traffic: with
``ACOG_REDIS_WAIT_REPLICAS=1`` no acknowledged label is lost, and every service process (and one
started afterwards) ends bit-identical to one learner fed the log (see ``failover.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from service.model_config import ModelConfig
from service.normalization import unit_l2

from .failover import CONFIG, MODEL, failover
from .fleet import served, wait_for_version

REPLICATED = {"ACOG_REDIS_WAIT_REPLICAS": "1", "ACOG_REDIS_WAIT_TIMEOUT_SECONDS": "2"}


@pytest.mark.slow
def test_a_failover_with_a_lagging_replica_loses_no_acknowledged_label(tmp_path: Path, rows: tuple) -> None:
    X, y, probe = rows
    with failover(tmp_path, X[:600], y[:600], REPLICATED) as (run, replicas, _cluster):
        assert run.acknowledged_before_kill >= 150
        assert run.lost == [], f"{len(run.lost)} of {len(run.acknowledged)} acknowledged labels lost"
        assert len(run.acknowledged) + run.refused == 600
        assert sorted(n for n, _ in run.log) == list(range(1, len(run.log) + 1))
        assert len(run.log) == len(run.acknowledged)  # nothing in the log that was not acknowledged
        learner = ModelConfig.model_validate(CONFIG).build_learner()
        for x, label, _ in run.ordered():
            learner.learn(unit_l2(np.asarray(x, dtype=np.float64)), label)
        expected = [learner.score(unit_l2(np.asarray(x, dtype=np.float64))) for x in probe]
        total = len(run.log)
        for replica in [*replicas.alive(), replicas.add()]:
            wait_for_version(replica, MODEL, total)
            scores, _, version = served(replica, MODEL, probe)
            assert (scores, version) == (expected, total)  # bit for bit
