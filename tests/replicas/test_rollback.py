"""A rollback across real processes: two replicas, the one that rolled back killed with SIGKILL right
after, a fresh process started later; all serve the checkpoint's state bit for bit, then the labels
of the new generation on top of it. The labels after the checkpoint are forgotten."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from ..support.service_process import ServiceProcess
from .fleet import Ledger, call, fleet, served, wait_for_version

CONFIG = {"n_features": 24}
ENV = {
    "ACOG_CHECKPOINT_EVERY_EVENTS": "40",
    "ACOG_CHECKPOINTS_KEPT": "3",
    "ACOG_CHECKPOINT_EVERY_SECONDS": "3600",
}


def label_through(replica: ServiceProcess, x: list[float], y: int, ledger: Ledger, offset: int = 0) -> dict:  # type: ignore[type-arg]
    prediction = call(replica, "POST", "/predict", {"model": "m", "features": x})
    answer = call(replica, "POST", "/feedback", {"prediction_id": prediction["prediction_id"], "label": y})
    ledger.record(prediction["prediction_id"], x, y, prediction["label"], offset + answer["model_version"])
    return answer


def wait_for_generation(replica: ServiceProcess, generation: int, within: float = 30.0) -> None:
    start = time.monotonic()
    while call(replica, "GET", "/models/m")["generation"] != generation:
        assert time.monotonic() - start < within, f"{replica.url} is not at generation {generation}"
        time.sleep(0.01)


@pytest.mark.slow
def test_a_rollback_survives_kill_9_and_the_replicas_agree(
    tmp_path: Path, single_redis: str, rows: tuple
) -> None:
    X, y, probe = rows
    history = Ledger(CONFIG)
    with fleet(tmp_path, single_redis, 2, ENV) as replicas:
        a, b = replicas.replicas
        call(a, "PUT", "/models/m", CONFIG)
        wait_for_version(b, "m", 0)
        for i in range(120):
            label_through(a if i % 2 else b, X[i], y[i], history)
        assert call(a, "POST", "/models/m/checkpoint")["version"] == 120
        old = call(a, "POST", "/predict", {"model": "m", "features": X[500]})
        listed = call(b, "GET", "/models/m/checkpoints")
        assert [(c["generation"], c["version"]) for c in listed["checkpoints"]] == [
            (1, 120),
            (1, 80),
            (1, 40),
        ]

        rolled = call(b, "POST", "/models/m/rollback", {"version": 80})
        assert (rolled["generation"], rolled["state"]["version"]) == (2, 0)
        replicas.kill(b)  # kill -9 of the replica that rolled back, at once

        kept = Ledger(CONFIG)  # the state of the checkpoint: the first 80 labels, nothing after
        for seq in range(1, 81):
            kept.entries[seq] = history.entries[seq]
        wait_for_generation(a, 2)
        scores, counts, version = served(a, "m", probe)
        assert (scores, counts, version) == (*kept.expected(probe), 0)
        forgotten = httpx.post(
            f"{a.url}/feedback", json={"prediction_id": old["prediction_id"], "label": 1}, timeout=30
        )
        assert forgotten.status_code == 410  # predictions of the rolled-back generation

        for i in range(120, 160):  # the new generation learns on top of the checkpoint's state
            label_through(a, X[i], y[i], kept, offset=80)
        fresh = replicas.add()
        replicas.restart(b)
        expected = kept.expected(probe)
        for replica in (a, b, fresh):
            wait_for_version(replica, "m", 40)
            assert served(replica, "m", probe) == (*expected, 40)  # bit for bit, everywhere
        assert [c["version"] for c in call(fresh, "GET", "/models/m/checkpoints")["checkpoints"]][-1] == 0
