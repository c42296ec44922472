"""Several real `acog serve` processes on one store, a client that survives any of them dying, and
the ledger of every label they acknowledged, to compare them all with the learner library.

Every acknowledged label's reply says where it sits in the model's log (``model_version`` is the
entry's sequence number), so the ledger knows the exact order the replicas applied them in, even
when labels went through different replicas at once. The reference is then one learner of the
library fed the same examples in that order: every replica, and any process started afterwards,
must score a probe set bit for bit like it, and hold the same measures.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from service.measures import Measures, Objective
from service.model_config import ModelConfig

from ..support.model_state import served as served_vector
from ..support.service_process import ServiceProcess

Json = dict[str, Any]


class Fleet:
    """``size`` replicas of the service on ``store_url``; any may be killed and started again.

    A replica is *ready* between the end of its start (``/readyz`` answered 200) and its kill: only
    ready replicas get traffic and may be killed, so a kill never races a start."""

    def __init__(self, directory: Path, store_url: str, size: int, env: dict[str, str] | None = None) -> None:
        self.directory = directory
        self.store_url = store_url
        self.env = {"ACOG_REDIS_URL": store_url, **(env or {})}
        self.replicas = [self._process(i) for i in range(size)]
        self.kills = 0
        self._ready: list[ServiceProcess] = []
        self._lock = threading.Lock()

    def _process(self, number: int) -> ServiceProcess:
        home = self.directory / f"replica-{number}"
        home.mkdir(parents=True, exist_ok=True)
        return ServiceProcess(home, self.env)

    def start(self) -> None:
        threads = [threading.Thread(target=self.restart, args=(replica,)) for replica in self.replicas]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(self._ready) == len(self.replicas), self.log()

    def restart(self, replica: ServiceProcess) -> None:
        """Start ``replica`` (again) and mark it ready."""
        replica.start()
        with self._lock:
            self._ready.append(replica)

    def add(self) -> ServiceProcess:
        """One more replica (a fresh process), started."""
        replica = self._process(len(self.replicas))
        self.replicas.append(replica)
        self.restart(replica)
        return replica

    def alive(self) -> list[ServiceProcess]:
        """The ready replicas."""
        with self._lock:
            return list(self._ready)

    def kill(self, replica: ServiceProcess) -> bool:
        """SIGKILL ``replica`` if it is ready; whether it was."""
        with self._lock:
            if replica not in self._ready:
                return False
            self._ready.remove(replica)
            replica.kill()
            self.kills += 1
            return True

    def close(self) -> None:
        with self._lock:
            self._ready.clear()
        for replica in self.replicas:
            replica.kill()

    def log(self) -> str:
        return "\n".join(f"--- {r.url}\n{r.log()}" for r in self.replicas)


@contextmanager
def fleet(directory: Path, store_url: str, size: int, env: dict[str, str] | None = None) -> Iterator[Fleet]:
    running = Fleet(directory, store_url, size, env)
    try:
        running.start()
        yield running
    finally:
        running.close()


RETRYABLE = (httpx.TransportError,)


def call(
    replica: ServiceProcess, method: str, path: str, body: Json | None = None, timeout: float = 30
) -> Json:
    """One request; raises on anything but 2xx (``httpx.HTTPStatusError``) or a broken connection."""
    response = httpx.request(method, f"{replica.url}{path}", json=body, timeout=timeout)
    response.raise_for_status()
    return dict(response.json()) if response.content else {}


@dataclass
class Ledger:
    """Every label a replica acknowledged: the example as sent, its label, the prediction made when it
    was scored, and the log position the reply named. Thread-safe."""

    config: Json
    entries: dict[int, tuple[list[float], int, int]] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, pid: str, x: list[float], y: int, yhat: int, seq: int) -> None:
        with self._lock:
            known = self.pids.get(pid)
            assert known is None or known == seq, f"{pid} acknowledged at entries {known} and {seq}"
            assert seq not in self.entries or self.entries[seq] == (x, y, yhat), f"entry {seq} twice"
            self.pids[pid] = seq
            self.entries[seq] = (x, y, yhat)

    def ordered(self) -> list[tuple[list[float], int, int]]:
        seqs = sorted(self.entries)
        assert seqs == list(range(1, len(seqs) + 1)), "the acknowledged labels do not fill the log"
        return [self.entries[s] for s in seqs]

    def reference(self) -> Any:
        learner = ModelConfig.model_validate(self.config).build_learner()
        for x, y, _ in self.ordered():
            learner.learn(served_vector(self.config, x), y)
        return learner

    def expected(self, probe: Sequence[list[float]]) -> tuple[list[float], tuple[int, int, int, int]]:
        """The probe scores and the counts ``(t_p, t_n, m_p, m_n)`` every replica must show."""
        reference = self.reference()
        ordered = self.ordered()
        measures = Measures.of([y for _, y, _ in ordered], [yhat for _, _, yhat in ordered], Objective())
        c = measures.counts
        scores = [reference.score(served_vector(self.config, x)) for x in probe]
        return scores, (c.t_p, c.t_n, c.m_p, c.m_n)


def served(
    replica: ServiceProcess, model: str, probe: Sequence[list[float]]
) -> tuple[list[float], tuple, int]:
    """A replica's probe scores, counts and version."""
    scores = [
        p["score"]
        for p in call(replica, "POST", "/predict", {"model": model, "instances": list(probe)})["predictions"]
    ]
    state = call(replica, "GET", f"/models/{model}")["state"]
    m = state["measures"]
    return scores, (m["t_p"], m["t_n"], m["m_p"], m["m_n"]), state["version"]


def wait_for_version(replica: ServiceProcess, model: str, version: int, within: float = 30.0) -> float:
    """Seconds until ``replica`` serves ``model`` at ``version`` or later (it may not know the model yet)."""
    start = time.monotonic()
    while True:
        response = httpx.get(f"{replica.url}/models/{model}", timeout=30)
        if response.status_code == 200 and response.json()["state"]["version"] >= version:
            return time.monotonic() - start
        assert response.status_code in (200, 404), response.text
        assert time.monotonic() - start < within, (
            f"{replica.url} is not at version {version}: {response.text}"
        )
        time.sleep(0.01)


class Traffic:
    """Predict-then-label rounds through random live replicas, retrying through crashes: a label whose
    answer was lost is sent again (to any replica) until one answers, and the ledger records where
    the log put it."""

    def __init__(self, fleet: Fleet, ledger: Ledger, model: str, seed: int) -> None:
        self.fleet = fleet
        self.ledger = ledger
        self.model = model
        self.rng = random.Random(seed)

    def _replica(self) -> ServiceProcess:
        while True:
            alive = self.fleet.alive()
            if alive:
                return self.rng.choice(alive)
            time.sleep(0.05)

    def _retry(self, method: str, path: str, body: Json) -> Json:
        deadline = time.monotonic() + 120
        while True:
            replica = self._replica()
            try:
                return call(replica, method, path, body)
            except RETRYABLE:
                pass
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code != 503:
                    raise
            assert time.monotonic() < deadline, f"{path} kept failing:\n{self.fleet.log()}"
            time.sleep(0.05)

    def round(self, X: Sequence[list[float]], y: Sequence[int]) -> None:
        predicted = self._retry("POST", "/predict", {"model": self.model, "instances": list(X)})[
            "predictions"
        ]
        items = [
            {"prediction_id": p["prediction_id"], "label": int(label)}
            for p, label in zip(predicted, y, strict=True)
        ]
        answer = self._retry("POST", "/feedback", {"items": items})["results"]
        for x, label, p, r in zip(X, y, predicted, answer, strict=True):
            assert r["applied"], r
            self.ledger.record(p["prediction_id"], list(x), int(label), p["label"], r["model_version"])
