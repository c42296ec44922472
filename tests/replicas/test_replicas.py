"""Several `acog serve` processes on one store are replicas of every model: each follows each log, no
acknowledged label is lost or skipped, and every replica (and any process started later) ends in the
bits a single process applying the same log would hold."""

from __future__ import annotations

import random
import statistics
import threading
import time
from pathlib import Path

import httpx
import pytest

from ..support.service_process import ServiceProcess
from .fleet import Ledger, Traffic, call, fleet, served, wait_for_version

CONFIG = {"n_features": 24}
REPRODUCTION_ENV = {
    "ACOG_CHECKPOINT_EVERY_EVENTS": "20",
    "ACOG_CHECKPOINTS_KEPT": "1",
    "ACOG_CHECKPOINT_EVERY_SECONDS": "3600",
}


def label_through(replica, model: str, x: list[float], y: int, ledger: Ledger) -> dict:  # type: ignore[no-untyped-def]
    prediction = call(replica, "POST", "/predict", {"model": model, "features": x})
    answer = call(replica, "POST", "/feedback", {"prediction_id": prediction["prediction_id"], "label": y})
    ledger.record(prediction["prediction_id"], x, y, prediction["label"], answer["model_version"])
    return answer


def test_the_issue_reproduction_loses_nothing(tmp_path: Path, single_redis: str, rows: tuple) -> None:
    """The reproduction of a lost-label bug: 25 labels through B, 1 through A, 1 through B, a
    checkpoint forced on A with one checkpoint kept (so the log is trimmed past what A had applied),
    kill -9 of both."""
    X, y, probe = rows
    ledger = Ledger(CONFIG)
    with fleet(tmp_path, single_redis, 2, REPRODUCTION_ENV) as replicas:
        a, b = replicas.replicas
        call(a, "PUT", "/models/m", CONFIG)
        wait_for_version(b, "m", 0)
        for i in range(25):
            label_through(b, "m", X[i], y[i], ledger)
        assert label_through(a, "m", X[25], y[25], ledger)["model_version"] == 26
        label_through(b, "m", X[26], y[26], ledger)
        checkpoint = call(a, "POST", "/models/m/checkpoint")
        assert checkpoint["version"] == 27 and checkpoint["written"] is True
        expected = ledger.expected(probe)
        for replica in (a, b):
            wait_for_version(replica, "m", 27)
            scores, counts, version = served(replica, "m", probe)
            assert (scores, counts, version) == (*expected, 27)
        replicas.kill(a)
        replicas.kill(b)
        fresh = replicas.add()
        scores, counts, version = served(fresh, "m", probe)
        assert version == 27 == len(ledger.ordered())  # 27 acknowledged, 27 applied
        assert (scores, counts) == expected  # bit for bit


def test_a_prediction_only_replica_follows_with_a_bounded_lag(
    tmp_path: Path, single_redis: str, rows: tuple
) -> None:
    """Labels go to A only; B only serves predictions and must reflect each label shortly after."""
    X, y, probe = rows
    ledger = Ledger(CONFIG)
    with fleet(tmp_path, single_redis, 2) as replicas:
        a, b = replicas.replicas
        call(a, "PUT", "/models/m", CONFIG)
        lags = []
        for i in range(300):
            version = label_through(a, "m", X[i], y[i], ledger)["model_version"]
            if i % 10 == 0:  # B answers a prediction at this version soon after A acknowledged it
                lags.append(wait_for_version(b, "m", version, within=5.0))
        assert max(lags) < 2.0 and statistics.median(lags) < 0.25, lags
        wait_for_version(b, "m", 300)
        assert served(b, "m", probe) == (*ledger.expected(probe), 300)


def test_model_changes_reach_every_replica_and_no_label_lands_in_a_dead_generation(
    tmp_path: Path, single_redis: str, rows: tuple
) -> None:
    X, y, _ = rows
    with fleet(tmp_path, single_redis, 2) as replicas:
        a, b = replicas.replicas
        call(a, "PUT", "/models/m", CONFIG)
        started = time.monotonic()
        while httpx.get(f"{b.url}/models/m").status_code != 200:  # created on A, served by B
            assert time.monotonic() - started < 1.0, "B did not learn of the model within a second"
            time.sleep(0.01)
        old = call(b, "POST", "/predict", {"model": "m", "instances": X[:200]})["predictions"]

        answers: list[tuple[float, int]] = []  # (time answered, status) of labels sent to B for generation 1

        def label_old() -> None:
            for p, label in zip(old, y[:200], strict=True):
                response = httpx.post(
                    f"{b.url}/feedback",
                    json={"prediction_id": p["prediction_id"], "label": label},
                    timeout=30,
                )
                answers.append((time.monotonic(), response.status_code))

        sender = threading.Thread(target=label_old)
        sender.start()
        time.sleep(0.3)
        call(a, "PUT", "/models/m?replace=true", CONFIG)
        replaced_at = time.monotonic()
        sender.join()
        assert {status for _, status in answers} <= {200, 410}
        assert all(status == 410 for at, status in answers if at > replaced_at), (
            "a label landed in a dead log"
        )
        assert any(status == 200 for _, status in answers) and any(status == 410 for _, status in answers)
        started = time.monotonic()
        while call(b, "GET", "/models/m")["generation"] != 2:
            assert time.monotonic() - started < 1.0, "B did not learn of the replacement within a second"
            time.sleep(0.01)
        assert call(b, "GET", "/models/m")["state"]["version"] == 0

        call(a, "DELETE", "/models/m")
        started = time.monotonic()
        while httpx.get(f"{b.url}/models/m").status_code != 404:
            assert time.monotonic() - started < 1.0, "B did not learn of the deletion within a second"
            time.sleep(0.01)


@pytest.mark.parametrize("store", ["redis", "cluster"])
def test_kill_9_of_any_replica_under_traffic_loses_nothing(
    tmp_path: Path, store: str, request: pytest.FixtureRequest, rows: tuple
) -> None:
    """Three replicas under concurrent traffic; replicas are killed at random (the checkpoint writer
    among them, also in the middle of a checkpoint write) and started again. The survivors and a
    fresh process end bit-identical to one learner fed the acknowledged labels in log order."""
    X, y, probe = rows
    url = (
        request.getfixturevalue("single_redis")
        if store == "redis"
        else request.getfixturevalue("cluster").url
    )
    env = {
        "ACOG_CHECKPOINT_EVERY_EVENTS": "60",
        "ACOG_CHECKPOINTS_KEPT": "1",
        "ACOG_CHECKPOINT_LEASE_SECONDS": "2",
        "ACOG_FAULT_CHECKPOINT_DELAY_SECONDS": "0.5",
    }
    ledger = Ledger(CONFIG)
    with fleet(tmp_path, url, 3, env) as replicas:
        call(replicas.replicas[0], "PUT", "/models/m", CONFIG)
        for replica in replicas.replicas:
            wait_for_version(replica, "m", 0)
        stop = threading.Event()
        chunks = [(start, min(start + 10, 900)) for start in range(0, 900, 10)]
        work = iter(chunks)
        lock = threading.Lock()

        def client(seed: int) -> None:
            traffic = Traffic(replicas, ledger, "m", seed)
            while True:
                with lock:
                    chunk = next(work, None)
                if chunk is None:
                    return
                traffic.round(X[chunk[0] : chunk[1]], y[chunk[0] : chunk[1]])

        restarts: list[threading.Thread] = []
        mid_checkpoint = 0

        def kill_and_restart(victim: ServiceProcess, pause: float) -> bool:
            if not replicas.kill(victim):
                return False
            restart = threading.Thread(target=lambda: (time.sleep(pause), replicas.restart(victim)))
            restart.start()
            restarts.append(restart)
            return True

        def killer() -> None:
            """Kills a random ready replica now and then (never the last one)."""
            rng = random.Random(11)
            while not stop.wait(rng.uniform(0.4, 0.9)):
                alive = replicas.alive()
                if len(alive) >= 2:
                    kill_and_restart(rng.choice(alive), rng.uniform(0, 0.5))

        def sniper() -> None:
            """Kills the checkpoint writer inside its write (the 0.5 s pause before sending), thrice."""
            nonlocal mid_checkpoint
            while mid_checkpoint < 3 and not stop.wait(0.005):
                for replica in replicas.alive():
                    if replica.writing_checkpoint() and kill_and_restart(replica, 0.2):
                        mid_checkpoint += 1
                        break

        clients = [threading.Thread(target=client, args=(seed,)) for seed in range(3)]
        chaos = [threading.Thread(target=killer), threading.Thread(target=sniper)]
        for thread in [*clients, *chaos]:
            thread.start()
        for thread in clients:
            thread.join()
        stop.set()
        for thread in chaos:
            thread.join()
        for restart in restarts:
            restart.join()
        assert replicas.kills >= 4 and mid_checkpoint >= 1, (replicas.kills, mid_checkpoint)
        expected = ledger.expected(probe)
        total = len(ledger.ordered())
        assert total == 900  # every label acknowledged once, in a gap-free log
        for replica in replicas.alive():
            wait_for_version(replica, "m", total)
            assert served(replica, "m", probe) == (*expected, total)
        for replica in replicas.alive():
            replicas.kill(replica)
        fresh = replicas.add()
        assert served(fresh, "m", probe) == (*expected, total)
