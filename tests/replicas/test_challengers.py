"""A challenger across real processes: added through one replica, labels through both, the replica
that promotes it killed with SIGKILL right after, a fresh process started later; every one serves
the promoted model bit for bit like a fresh model of the challenger's configuration given the labels
after the challenger was added."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import redis

from model_store.keys import GenerationKeys
from service.model_config import ModelConfig
from service.normalization import unit_l2

from ..support.service_process import ServiceProcess
from .fleet import Ledger, call, fleet, wait_for_version

CONFIG = {"n_features": 24}
CHALLENGER = {"n_features": 24, "algorithm": "arow", "objective": "cost", "c_p": 0.8}


def label_through(replica: ServiceProcess, x: list[float], y: int, ledger: Ledger) -> int:
    prediction = call(replica, "POST", "/predict", {"model": "m", "features": x})
    answer = call(replica, "POST", "/feedback", {"prediction_id": prediction["prediction_id"], "label": y})
    ledger.record(prediction["prediction_id"], x, y, prediction["label"], answer["model_version"])
    return int(answer["model_version"])


def scores(replica: ServiceProcess, probe: list[list[float]]) -> list[float]:
    answer = call(replica, "POST", "/predict", {"model": "m", "instances": probe})
    return [p["score"] for p in answer["predictions"]]


@pytest.mark.slow
def test_a_promoted_challenger_survives_kill_9_and_equals_a_fresh_model(
    tmp_path: Path, single_redis: str, rows: tuple
) -> None:
    X, y, probe = rows
    ledger = Ledger(CONFIG)
    with fleet(tmp_path, single_redis, 2, {"ACOG_CHECKPOINT_EVERY_EVENTS": "50"}) as replicas:
        a, b = replicas.replicas
        call(a, "PUT", "/models/m", CONFIG)
        wait_for_version(b, "m", 0)
        for i in range(60):
            label_through(a if i % 2 else b, X[i], y[i], ledger)
        added = call(a, "PUT", "/models/m/challengers/arow", CHALLENGER)
        since = added["state"]["challengers"]["arow"]["since_version"]
        assert since == 61
        for i in range(60, 260):
            label_through(a if i % 2 else b, X[i], y[i], ledger)
        wait_for_version(a, "m", 261)
        wait_for_version(b, "m", 261)
        sides = [call(r, "GET", "/models/m")["state"]["challengers"]["arow"] for r in (a, b)]
        assert sides[0]["measures"] == sides[1]["measures"] and sides[0]["labels"] == 200

        promoted = call(b, "POST", "/models/m/challengers/arow/promote")
        assert promoted["generation"] == 2 and promoted["config"]["algorithm"] == "arow"
        replicas.kill(b)  # kill -9 of the replica that promoted, at once

        fresh = ModelConfig.model_validate(CHALLENGER).build_learner()
        learned = [ledger.entries[s] for s in sorted(ledger.entries) if s > since]
        for x, label, _ in learned:
            fresh.learn(unit_l2(np.asarray(x, dtype=np.float64)), label)
        expected = [fresh.score(unit_l2(np.asarray(x, dtype=np.float64))) for x in probe]
        start = time.monotonic()
        while call(a, "GET", "/models/m")["generation"] != 2:
            assert time.monotonic() - start < 30
            time.sleep(0.01)
        late = replicas.add()
        replicas.restart(b)
        for replica in (a, b, late):
            assert scores(replica, probe) == expected  # bit for bit
            state = call(replica, "GET", "/models/m")["state"]
            assert state["version"] == 0 and state["measures"]["t_p"] + state["measures"]["t_n"] == 200


@pytest.mark.slow
def test_a_challenger_started_from_the_retained_log_is_exact_through_kill_9_and_a_trimmed_log(
    tmp_path: Path, single_redis: str, rows: tuple
) -> None:
    """``"start": "log"``: the replica that built the challenger from the retained history is killed
    with SIGKILL as soon as it answers and restarts (it replays the adding entry), the other follows
    it live, a process started after the log was trimmed past the entry loads it from a checkpoint;
    all hold the same challenger, and once promoted it equals a fresh model given the retained labels
    and those after, bit for bit. The history is partial: checkpoints trimmed the log's start."""
    X, y, probe = rows
    ledger = Ledger(CONFIG)
    env = {
        "ACOG_CHECKPOINT_EVERY_EVENTS": "50",
        "ACOG_CHECKPOINTS_KEPT": "1",
        "ACOG_LOG_RETAIN_ENTRIES": "30",
    }
    with fleet(tmp_path, single_redis, 2, env) as replicas:
        a, b = replicas.replicas
        call(a, "PUT", "/models/m", CONFIG)
        wait_for_version(b, "m", 0)
        for i in range(120):
            label_through(a if i % 2 else b, X[i], y[i], ledger)
        wait_for_version(a, "m", 120)
        added = call(a, "PUT", "/models/m/challengers/arow", {**CHALLENGER, "start": "log"})
        replicas.kill(a)  # kill -9 of the replica that replayed the history, at once
        arow = added["state"]["challengers"]["arow"]
        history, since = arow["history"], arow["since_version"]
        assert arow["start"] == "log" and since == 121 and history["to_version"] == 120
        assert history["from_version"] > 1 and history["labels"] == 121 - history["from_version"]
        replicas.restart(a)
        for i in range(120, 260):
            label_through(a if i % 2 else b, X[i], y[i], ledger)
        store = redis.Redis.from_url(single_redis)
        start = time.monotonic()
        while int(store.xrange(GenerationKeys("m", 1).log, count=1)[0][1][b"n"]) <= since:
            assert time.monotonic() - start < 30, "the log was not trimmed past the challenger's entry"
            time.sleep(0.05)
        late = replicas.add()  # finds the adding entry only in a checkpoint
        for replica in (a, b, late):
            wait_for_version(replica, "m", 261)
        sides = [call(r, "GET", "/models/m")["state"]["challengers"]["arow"] for r in (a, b, late)]
        assert all(s["measures"] == sides[0]["measures"] and s["history"] == history for s in sides)

        promoted = call(b, "POST", "/models/m/challengers/arow/promote")
        assert promoted["generation"] == 2
        replicas.kill(b)
        fresh = ModelConfig.model_validate(CHALLENGER).build_learner()
        learned = [ledger.entries[s] for s in sorted(ledger.entries) if s >= history["from_version"]]
        for x, label, _ in learned:
            fresh.learn(unit_l2(np.asarray(x, dtype=np.float64)), label)
        expected = [fresh.score(unit_l2(np.asarray(x, dtype=np.float64))) for x in probe]
        replicas.restart(b)
        for replica in (a, b, late):
            start = time.monotonic()
            while call(replica, "GET", "/models/m")["generation"] != 2:
                assert time.monotonic() - start < 30
                time.sleep(0.01)
            assert scores(replica, probe) == expected  # bit for bit
            measures = call(replica, "GET", "/models/m")["state"]["measures"]
            assert measures["t_p"] + measures["t_n"] == len(learned) == history["labels"] + 140
