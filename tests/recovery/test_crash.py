"""kill -9 at random points, mid-checkpoint included: the weights end bit-identical.

The service runs as a subprocess against a Redis server of the test's own (append-only).
A client streams 20,000 labelled a9a examples through /predict and /feedback in chunks,
retrying whatever a crash interrupted, while the test SIGKILLs the service at seeded random
moments (during requests, between them, and inside a checkpoint write) and restarts it.

At the end, the model must score a probe set bit for bit like an uninterrupted run of the
same stream through the learner library (same configuration, same label order), its
measures must equal that run's, and the number of labels applied (the model's version)
must equal the number of labels acknowledged.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from service.evaluation.datasets import load
from service.measures import Measures, Objective
from service.model_config import ModelConfig
from service.normalization import unit_l2

from ..conftest import dataset_path
from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess

N_EXAMPLES = 20_000
CHUNK = 100
CONFIG = {"n_features": 123}  # the service defaults: acog, loss II, eta auto, intercept, Laplace rho
RETRYABLE = (httpx.TransportError, httpx.HTTPStatusError)


class Crashy:
    """The service, plus a client that retries through crashes."""

    def __init__(self, service: ServiceProcess) -> None:
        self.service = service
        self.kills = 0
        self.mid_checkpoint_kills = 0

    def call(self, path: str, body: dict) -> dict:
        for _ in range(200):
            try:
                response = httpx.post(f"{self.service.url}{path}", json=body, timeout=30)
                response.raise_for_status()
                return response.json()
            except RETRYABLE as exc:
                if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code < 500:
                    raise
                self.ensure_running()
                time.sleep(0.05)
        raise AssertionError(f"{path} kept failing")

    def ensure_running(self) -> None:
        if self.service.process is None or self.service.process.poll() is not None:
            self.service.process = None
            self.service.start()

    def kill_and_restart(self) -> None:
        self.service.kill()
        self.kills += 1
        self.service.start()

    def kill_later(self, delay: float) -> threading.Thread:
        """SIGKILL after ``delay`` seconds, whatever the client is doing then."""

        def act() -> None:
            time.sleep(delay)
            if self.service.process is not None:
                self.service.process.kill()
                self.kills += 1

        thread = threading.Thread(target=act)
        thread.start()
        return thread


@pytest.fixture(scope="module")
def stream() -> tuple[list[list[float]], np.ndarray, list[list[float]]]:
    dataset_path("a9a", "a9a.xz")
    data = load("a9a")
    order = np.random.default_rng(2026).permutation(data.n_samples)
    X = data.X[order].toarray()
    y = data.y[order].astype(int)
    return X[:N_EXAMPLES].tolist(), y[:N_EXAMPLES], X[N_EXAMPLES : N_EXAMPLES + 200].tolist()


@pytest.fixture
def crashy(tmp_path: Path) -> Iterator[Crashy]:
    redis_server = PrivateRedis(tmp_path)
    redis_server.start()
    service = ServiceProcess(
        tmp_path,
        {
            "ACOG_REDIS_URL": redis_server.url,
            "ACOG_CHECKPOINT_EVERY_EVENTS": "700",
            "ACOG_CHECKPOINT_EVERY_SECONDS": "3600",
            "ACOG_CHECKPOINTS_KEPT": "2",
            "ACOG_FAULT_CHECKPOINT_DELAY_SECONDS": "0.3",
        },
    )
    service.start()
    yield Crashy(service)
    service.kill()
    redis_server.close()


def checkpoint_in_progress(log: str) -> bool:
    """Whether the service's last checkpoint line says it started writing and has not finished."""
    lines = [line for line in log.splitlines() if "checkpoint at version" in line]
    return bool(lines) and "writing checkpoint" in lines[-1]


def wait_for_checkpoint_write(service: ServiceProcess, within: float = 0.15) -> bool:
    """Poll the log for a checkpoint paused between encoding and writing.

    A checkpoint starts right after the reply that brought its 700th label, and its state is
    encoded in a thread before the "writing" line is logged, so a single look straight after
    the reply can come too early; the next /feedback then waits for the checkpoint to finish
    and the chance is gone. ``within`` is shorter than the service's 0.3 s fault pause, so a
    kill that follows a True lands inside the pause.
    """
    deadline = time.monotonic() + within
    while True:
        if checkpoint_in_progress(service.log()):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


@pytest.mark.slow
def test_kill_9_anywhere_loses_nothing_and_changes_no_bit(crashy: Crashy, stream: tuple) -> None:
    X, y, probe = stream
    created = httpx.put(f"{crashy.service.url}/models/a9a", json=CONFIG, timeout=30)
    assert created.status_code == 201, created.text

    rng = random.Random(7)
    chunks = list(range(0, N_EXAMPLES, CHUNK))
    plan = {
        c: how
        for c, how in zip(rng.sample(chunks[:-20], 9), ["during", "between", "checkpoint"] * 3, strict=True)
    }
    predicted: list[int] = []
    acknowledged = 0
    armed = False  # a kill waiting for the next checkpoint write
    for start in chunks:
        rows = slice(start, start + CHUNK)
        how = plan.get(start)
        armed = armed or how == "checkpoint"
        killer = crashy.kill_later(rng.uniform(0.0, 0.03)) if how == "during" else None
        reply = crashy.call("/predict", {"model": "a9a", "instances": X[rows]})
        items = [
            {"prediction_id": p["prediction_id"], "label": int(label)}
            for p, label in zip(reply["predictions"], y[rows], strict=True)
        ]
        answer = crashy.call("/feedback", {"items": items})
        if killer is not None:
            killer.join()
        predicted += [p["label"] for p in reply["predictions"]]
        assert all(r["applied"] or r["duplicate"] for r in answer["results"]), answer
        acknowledged += len(items)
        if how == "between":
            crashy.kill_and_restart()
        if armed and wait_for_checkpoint_write(crashy.service):
            crashy.kill_and_restart()  # inside the pause between encoding and writing
            crashy.mid_checkpoint_kills += 1
            armed = False

    crashy.ensure_running()
    info = httpx.get(f"{crashy.service.url}/models/a9a").json()
    assert crashy.kills >= 9 and crashy.mid_checkpoint_kills >= 3, (crashy.kills, crashy.mid_checkpoint_kills)
    assert info["state"]["version"] == acknowledged == N_EXAMPLES  # applied == acknowledged
    served = crashy.call("/predict", {"model": "a9a", "instances": probe})["predictions"]

    reference = ModelConfig.model_validate(CONFIG).build_learner()
    for x, label in zip(X, y, strict=True):
        reference.learn(unit_l2(np.asarray(x)), int(label))
    expected = [reference.score(unit_l2(np.asarray(x))) for x in probe]
    assert [p["score"] for p in served] == expected  # bit for bit

    # Every part of the state that a restart could get wrong: the measures (from the served
    # predictions), the windowed measures, and each eta member's running objective.
    def counts(m: dict) -> tuple:
        return m["t_p"], m["t_n"], m["m_p"], m["m_n"]

    yhat = np.asarray(predicted)
    measures = Measures.of(y, yhat, Objective())
    assert counts(info["state"]["measures"]) == counts(measures.summary())
    window = info["state"]["window"]
    assert counts(window) == counts(Measures.of(y[-window["size"] :], yhat[-window["size"] :]).summary())
    assert info["state"]["eta"]["members"] == reference.member_objectives()  # type: ignore[attr-defined]
    assert info["state"]["eta"]["selected"] == reference.eta  # type: ignore[attr-defined]
