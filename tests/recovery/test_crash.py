"""kill -9 at random points, mid-checkpoint included: the weights end bit-identical.

The service runs as a subprocess against a Redis server of the test's own (append-only).
The replay loop (``service.replay_loop``) streams 20,000 labelled a9a examples
through /predict and /feedback in chunks, its retries getting through whatever a crash
interrupted (each failed attempt restarts the service if it is down), while the test SIGKILLs
the service at seeded random moments (during requests, between them, and inside a checkpoint
write) and restarts it.

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

import numpy as np
import pytest

from service.client import Client, RetryEvent, RetryPolicy
from service.datasets import load
from service.measures import Measures, Objective
from service.model_config import ModelConfig
from service.replay_loop import replay

from ..conftest import dataset_path
from ..support.model_state import served as served_vector
from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess

N_EXAMPLES = 20_000
CHUNK = 100
CONFIG = {
    "n_features": 123
}  # the service defaults: acog, loss auto (II and I), eta auto, intercept, Laplace rho


class Crashy:
    """The service, plus a client that retries through crashes."""

    def __init__(self, service: ServiceProcess) -> None:
        self.service = service
        self.kills = 0
        self.mid_checkpoint_kills = 0
        retry = RetryPolicy(
            attempts=200, backoff=0.05, max_backoff=0.05, deadline=600.0, on_retry=self.revive
        )
        self.client = Client(service.url, timeout=30, retry=retry)

    def revive(self, event: RetryEvent) -> None:
        """Before each retry: restart the service if a kill took it down."""
        self.ensure_running()

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
            "ACOG_FAULT_CHECKPOINT_DELAY_SECONDS": "0.6",
            # a killed process keeps the checkpoint-writer lease until it expires: the restarted
            # one writes checkpoints after a second, not after the default ten
            "ACOG_CHECKPOINT_LEASE_SECONDS": "1",
        },
    )
    service.start()
    crashy = Crashy(service)
    yield crashy
    crashy.client.close()
    service.kill()
    redis_server.close()


def wait_for_checkpoint_write(service: ServiceProcess, within: float = 0.4) -> bool:
    """Poll the log for a checkpoint paused between encoding and writing.

    A checkpoint starts right after the reply that brought its 700th label, and its state is
    encoded in a thread before the "writing" line is logged, so a single look straight after
    the reply can come too early; the next /feedback then waits for the checkpoint to finish
    and the chance is gone. ``within`` is shorter than the service's 0.6 s fault pause, so a
    kill that follows a True lands inside the pause.
    """
    deadline = time.monotonic() + within
    while True:
        if service.writing_checkpoint():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


@pytest.mark.slow
def test_kill_9_anywhere_loses_nothing_and_changes_no_bit(crashy: Crashy, stream: tuple) -> None:
    X, y, probe = stream
    client = crashy.client
    created = client.put_model("a9a", CONFIG)
    assert created.generation == 1, created

    rng = random.Random(7)
    chunks = list(range(0, N_EXAMPLES, CHUNK))
    plan = {
        c: how
        for c, how in zip(rng.sample(chunks[:-20], 9), ["during", "between", "checkpoint"] * 3, strict=True)
    }
    predicted: list[int] = []
    acknowledged = 0
    armed = 0  # kills waiting for a checkpoint write (a count: one that missed its checkpoint waits on)

    def killer_for(start: int) -> threading.Thread | None:
        """Started before chunk ``start`` is sent, when the plan kills during it."""
        return crashy.kill_later(rng.uniform(0.0, 0.03)) if plan.get(start) == "during" else None

    killer = killer_for(0)
    for step in replay(client, X, y, model="a9a", batch=CHUNK, label_batch=CHUNK):
        start = step.rows[0]
        how = plan.get(start)
        armed += how == "checkpoint"
        if killer is not None:
            killer.join()
        predicted += [p.label for p in step.predictions]
        assert all(r.applied or r.duplicate for r in step.labelled), step.labelled
        acknowledged += len(step.labelled)
        if how == "between":
            crashy.kill_and_restart()
        if armed and wait_for_checkpoint_write(crashy.service):
            crashy.kill_and_restart()  # inside the pause between encoding and writing
            crashy.mid_checkpoint_kills += 1
            armed -= 1
        killer = killer_for(start + CHUNK)

    crashy.ensure_running()
    info = client.get_model("a9a").model_dump()
    assert crashy.kills >= 9 and crashy.mid_checkpoint_kills >= 3, (crashy.kills, crashy.mid_checkpoint_kills)
    assert info["state"]["version"] == acknowledged == N_EXAMPLES  # applied == acknowledged
    served = client.predict_batch(probe, model="a9a")

    reference = ModelConfig.model_validate(CONFIG).build_learner()
    for x, label in zip(X, y, strict=True):
        reference.learn(served_vector(CONFIG, x), int(label))
    expected = [reference.score(served_vector(CONFIG, x)) for x in probe]
    assert [p.score for p in served] == expected  # bit for bit

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
