"""A Redis Cluster failover under label traffic, with the model's replica lagging: the scenario the
failover test and ``bench.cluster_durability`` run.

Set-up: 3 masters with a replica each (node timeout 1 s), ``replicas`` service processes on it, one
model. Clients send predict-then-label rounds through random service processes, retrying a label on
503 or a broken connection until a 200 answers it. After ``before`` acknowledged labels the
replica of the master owning the model's slot stalls and loses its link (:meth:`lag`: from then on
writes reach the master only), traffic goes on for ``lag_seconds``, then that master is killed
(SIGKILL) while the replica still sleeps; when it wakes the cluster promotes it, the killed node is
started again (it rejoins as the new master's replica) and traffic goes on to the end of the rows.

Every acknowledged label is recorded with the log position its reply named. At the end the log is
read from the cluster: an acknowledged label whose prediction id is not in the log is *lost*. A
label answered ``unknown`` (its prediction was stored only on the killed master: predictions are
not waited for) was never acknowledged and counts as *refused*.
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
from redis.cluster import RedisCluster as SyncCluster

from model_store.keys import GenerationKeys

from ..support.redis_cluster import RedisClusterProcesses
from ..support.service_process import ServiceProcess
from .fleet import Fleet, Json, fleet

MODEL = "m"
CONFIG = {"n_features": 24}
ROUND = 5
"""Labels per predict-then-label round."""


@dataclass
class FailoverRun:
    """What one run acknowledged, refused and lost."""

    acknowledged: dict[str, tuple[int, list[float], int, int]] = field(default_factory=dict)
    """prediction id -> (log position, features, label, prediction) of every acknowledged label."""
    refused: int = 0
    unavailable: int = 0
    """503 answers to a label request (each retried)."""
    acknowledged_before_kill: int = 0
    log: list[tuple[int, str]] = field(default_factory=list)
    """(position, prediction id) of every entry of the model's log after the run."""
    failover_seconds: float = 0.0
    """From the kill to the replica serving as master of an ``ok`` cluster."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def lost(self) -> list[str]:
        """Acknowledged labels missing from the log, or at another position than acknowledged."""
        where = {pid: n for n, pid in self.log}
        return sorted(pid for pid, (n, *_) in self.acknowledged.items() if where.get(pid) != n)

    def ordered(self) -> list[tuple[list[float], int, int]]:
        """The acknowledged labels in log order (features, label, prediction)."""
        return [entry[1:] for entry in sorted(self.acknowledged.values(), key=lambda e: e[0])]


def _call(replica: ServiceProcess, method: str, path: str, body: Json | None = None) -> httpx.Response:
    return httpx.request(method, f"{replica.url}{path}", json=body, timeout=30)


class _Client:
    """One client thread's rounds; every request is retried on 503 or a broken connection."""

    def __init__(self, replicas: Fleet, run: FailoverRun, seed: int, deadline: float) -> None:
        self.replicas = replicas
        self.run = run
        self.rng = random.Random(seed)
        self.deadline = deadline

    def _send(self, path: str, body: Json) -> Json:
        while True:
            assert time.monotonic() < self.deadline, f"{path} kept failing:\n{self.replicas.log()}"
            replica = self.rng.choice(self.replicas.alive())
            try:
                response = _call(replica, "POST", path, body)
            except httpx.TransportError:
                time.sleep(0.05)
                continue
            if response.status_code == 503:
                if path == "/feedback":
                    with self.run._lock:
                        self.run.unavailable += 1
                time.sleep(0.05)
                continue
            assert response.status_code == 200, response.text
            return dict(response.json())

    def round(self, X: Sequence[list[float]], y: Sequence[int]) -> None:
        predicted = self._send("/predict", {"model": MODEL, "instances": list(X)})["predictions"]
        items = [
            {"prediction_id": p["prediction_id"], "label": int(label)}
            for p, label in zip(predicted, y, strict=True)
        ]
        answers = self._send("/feedback", {"items": items})["results"]
        with self.run._lock:
            for x, label, p, r in zip(X, y, predicted, answers, strict=True):
                if r["applied"]:
                    known = self.run.acknowledged.get(p["prediction_id"])
                    entry = (int(r["model_version"]), list(x), int(label), int(p["label"]))
                    assert known is None or known == entry, (known, entry)
                    self.run.acknowledged[p["prediction_id"]] = entry
                else:
                    self.run.refused += 1


def read_log(cluster: RedisClusterProcesses, generation: int = 1) -> list[tuple[int, str]]:
    """(position, prediction id) of the model's log entries, from the master owning its slot."""
    key = GenerationKeys(MODEL, generation).log
    with SyncCluster(host="127.0.0.1", port=next(iter(cluster.processes))) as client:
        entries: Any = client.xrange(key)
    return [(int(fields[b"n"]), fields[b"pid"].decode()) for _, fields in entries]


@contextmanager
def failover(
    directory: Path,
    X: Sequence[list[float]],
    y: Sequence[int],
    env: dict[str, str],
    *,
    replicas: int = 2,
    clients: int = 2,
    before: int = 150,
    lag_seconds: float = 2.0,
    timeout: float = 120.0,
) -> Iterator[tuple[FailoverRun, Fleet, RedisClusterProcesses]]:
    """Run the scenario over the rows ``X``, ``y``; yields the run with the service processes and the
    cluster still up (for the caller to compare them), and stops them all after."""
    cluster = RedisClusterProcesses(directory / "cluster", replicas=1, node_timeout_ms=1000)
    cluster.start()
    try:
        service_env = {  # no checkpoint, so the log keeps every entry for the count of the lost
            "ACOG_REDIS_TIMEOUT_SECONDS": "2",
            "ACOG_REDIS_CONNECT_TIMEOUT_SECONDS": "10",  # a loaded machine: starts must not give up
            "ACOG_CHECKPOINT_EVERY_EVENTS": "1000000",
            "ACOG_CHECKPOINT_EVERY_SECONDS": "3600",
            **env,
        }
        with fleet(directory, cluster.url, replicas, service_env) as processes:
            first = processes.replicas[0]
            assert _call(first, "PUT", f"/models/{MODEL}", CONFIG).status_code == 201
            for replica in processes.replicas:
                while _call(replica, "GET", f"/models/{MODEL}").status_code != 200:
                    time.sleep(0.01)
            run = FailoverRun()
            master = cluster.node_of(GenerationKeys(MODEL, 1).log)
            replica_port = cluster.replica_of(master)
            deadline = time.monotonic() + timeout
            rounds = iter(range(0, len(X), ROUND))
            lock = threading.Lock()

            def client(seed: int) -> None:
                worker = _Client(processes, run, seed, deadline)
                while True:
                    with lock:
                        start = next(rounds, None)
                    if start is None:
                        return
                    worker.round(X[start : start + ROUND], y[start : start + ROUND])

            def chaos() -> None:
                while len(run.acknowledged) < before:
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
                sleeper = cluster.lag(master, lag_seconds + 1.0)
                time.sleep(lag_seconds)
                with run._lock:
                    run.acknowledged_before_kill = len(run.acknowledged)
                killed = time.monotonic()
                cluster.kill(master)
                sleeper.join()
                cluster.wait_for_master(replica_port)
                run.failover_seconds = time.monotonic() - killed
                cluster.restart(master)  # it rejoins as the new master's replica

            errors: list[BaseException] = []

            def guarded(target: Any, *args: Any) -> threading.Thread:
                def body() -> None:
                    try:
                        target(*args)
                    except BaseException as exc:
                        errors.append(exc)

                return threading.Thread(target=body)

            threads = [guarded(client, seed) for seed in range(clients)] + [guarded(chaos)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0]
            run.log = read_log(cluster)
            print(
                f"acknowledged {len(run.acknowledged)} ({run.acknowledged_before_kill} before the kill), "
                f"refused {run.refused}, 503 {run.unavailable}, lost {len(run.lost)}, "
                f"failover {run.failover_seconds:.1f} s"
            )
            yield run, processes, cluster
    finally:
        cluster.close()
