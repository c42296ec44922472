"""Redis stopped, restarted under load, and corrupt checkpoints: each ends in a correct state.

All against the real service (a subprocess) and a Redis server of the test's own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import pytest
import redis

from service.model_config import ModelConfig

from ..support.model_state import served
from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess

D = 8
CONFIG = {"n_features": D, "eta": 1.0}


@dataclass
class Stack:
    redis: PrivateRedis
    service: ServiceProcess
    url: str = field(init=False)
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.url = self.service.url
        self.http = httpx.Client(
            base_url=self.service.url, timeout=30
        )  # one client: a new one per call costs ~20 ms of TLS setup


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    server = PrivateRedis(tmp_path, appendfsync="always")
    server.start()
    service = ServiceProcess(
        tmp_path,
        {
            "ACOG_REDIS_URL": server.url,
            "ACOG_CHECKPOINT_EVERY_EVENTS": "50",
            "ACOG_CHECKPOINTS_KEPT": "3",
            "ACOG_MAINTENANCE_INTERVAL_SECONDS": "0.5",
        },
    )
    service.start()
    stack = Stack(server, service)
    yield stack
    stack.http.close()
    service.kill()
    server.close()


def examples(n: int, seed: int) -> tuple[list[list[float]], list[int]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0.3, 1, -1)
    return X.tolist(), y.tolist()


def reference_scores(X: list[list[float]], y: list[int], probe: list[list[float]]) -> list[float]:
    learner = ModelConfig.model_validate(CONFIG).build_learner()
    for x, label in zip(X, y, strict=True):
        learner.learn(served(CONFIG, x), label)
    return [learner.score(served(CONFIG, x)) for x in probe]


def label_one(stack: Stack, x: list[float], y: int) -> dict:
    prediction = stack.http.post("/predict", json={"model": "m", "features": x}).json()
    answer = stack.http.post("/feedback", json={"prediction_id": prediction["prediction_id"], "label": y})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_stopped_redis_means_503_for_labels_then_everything_resumes(stack: Stack) -> None:
    assert stack.http.put("/models/m", json=CONFIG).status_code == 201
    X, y = examples(40, seed=1)
    for x, label in zip(X[:20], y[:20], strict=True):
        label_one(stack, x, label)
    waiting = stack.http.post("/predict", json={"model": "m", "features": X[20]}).json()
    assert waiting["stored"] is True

    stack.redis.stop()
    before = stack.http.get("/models/m").json()["state"]
    refused = stack.http.post("/feedback", json={"prediction_id": waiting["prediction_id"], "label": y[20]})
    assert refused.status_code == 503
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.json()["detail"][0]["type"] == "store_unavailable"
    from_memory = stack.http.post("/predict", json={"model": "m", "features": X[21]})
    assert from_memory.status_code == 200 and from_memory.json()["stored"] is False
    assert (
        from_memory.json()["score"]
        == stack.http.post(f"{stack.url}/predict", json={"model": "m", "features": X[21]}).json()["score"]
    )
    assert stack.http.get("/readyz").status_code == 503
    assert stack.http.get("/healthz").status_code == 200
    assert stack.http.get("/models/m").json()["state"] == before  # nothing half-applied

    stack.redis.start()  # same port and directory: the append-only file is reloaded
    deadline = time.monotonic() + 15
    while stack.http.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, "the service did not reconnect"
        time.sleep(0.1)
    resumed = stack.http.post("/feedback", json={"prediction_id": waiting["prediction_id"], "label": y[20]})
    assert resumed.status_code == 200 and resumed.json()["applied"], resumed.text
    assert resumed.json()["model_version"] == 21
    for x, label in zip(X[21:], y[21:], strict=True):
        label_one(stack, x, label)
    probe = examples(5, seed=9)[0]
    served = stack.http.post("/predict", json={"model": "m", "instances": probe}).json()["predictions"]
    assert [p["score"] for p in served] == reference_scores(X, y, probe)


def test_a_redis_restart_under_load_loses_no_acknowledged_label(stack: Stack) -> None:
    assert stack.http.put("/models/m", json=CONFIG).status_code == 201
    X, y = examples(600, seed=2)
    acknowledged: list[int] = []  # indices of the examples whose label was acknowledged, in order
    errors: list[int] = []

    def client() -> None:
        """Retry like a correct client: a label is retried with the SAME prediction id (it counts
        once); only a prediction that was not stored is asked for again."""
        with httpx.Client(base_url=stack.url, timeout=10) as http:
            for i, (x, label) in enumerate(zip(X, y, strict=True)):
                pid = None
                while pid is None:
                    try:
                        p = http.post("/predict", json={"model": "m", "features": x}).json()
                        pid = p["prediction_id"] if p.get("stored") else None
                    except httpx.TransportError:
                        pass
                    time.sleep(0 if pid else 0.02)
                while True:
                    try:
                        answer = http.post("/feedback", json={"prediction_id": pid, "label": label})
                        if answer.status_code == 200:
                            acknowledged.append(i)
                            break
                        errors.append(answer.status_code)
                    except httpx.TransportError:
                        pass
                    time.sleep(0.02)

    thread = threading.Thread(target=client)
    thread.start()
    time.sleep(1.0)
    stack.redis.terminate()  # a clean Redis restart while labels stream in
    time.sleep(0.5)
    stack.redis.start()
    thread.join(120)
    assert not thread.is_alive()
    assert acknowledged == list(range(len(X)))  # each label acknowledged once, in order
    assert set(errors) <= {503}, errors  # only "retry" while Redis was away
    info = stack.http.get("/models/m").json()
    assert info["state"]["version"] == len(X)
    probe = examples(5, seed=9)[0]
    served = stack.http.post("/predict", json={"model": "m", "instances": probe}).json()["predictions"]
    assert [p["score"] for p in served] == reference_scores(X, y, probe)


INDEX = "acog:{m}:1:ckpt_index"  # the retained checkpoints of model m, newest first (docs/store-contract.md)


def corrupt(url: str, index: int) -> None:
    """Flip the middle byte of the blob of retained checkpoint ``index`` (0: the newest), in whichever
    of its chunks (fields "0", "1", ... of ``acog:{m}:1:ckpt:<token>``) holds that byte."""
    client = redis.Redis.from_url(url)
    _, token, chunks, size = client.lindex(INDEX, index).decode("ascii").split(" ")[:4]
    key = f"acog:{{m}}:1:ckpt:{token}"
    offset = int(size) // 2
    for number in range(int(chunks)):
        chunk = bytearray(client.hget(key, str(number)))
        if offset < len(chunk):
            chunk[offset] ^= 0xFF
            client.hset(key, str(number), bytes(chunk))
            break
        offset -= len(chunk)
    else:
        raise AssertionError(f"checkpoint {index} has no byte {int(size) // 2}")
    client.close()


def test_a_corrupt_checkpoint_falls_back_to_the_previous_one_and_replays(stack: Stack) -> None:
    assert stack.http.put("/models/m", json=CONFIG).status_code == 201
    X, y = examples(300, seed=3)
    for x, label in zip(X, y, strict=True):
        label_one(stack, x, label)
    assert stack.service.stop() is not None  # SIGTERM: a final checkpoint at version 300
    client = redis.Redis.from_url(stack.redis.url)
    assert client.llen(INDEX) == 3
    assert client.xlen("acog:{m}:1:log") < 300  # trimmed below the oldest retained checkpoint
    corrupt(stack.redis.url, 0)  # the newest

    stack.service.start()
    assert "unusable" in stack.service.log()
    info = stack.http.get("/models/m").json()
    assert info["status"] == "serving" and info["state"]["version"] == 300
    probe = examples(5, seed=9)[0]
    served = stack.http.post("/predict", json={"model": "m", "instances": probe}).json()["predictions"]
    assert [p["score"] for p in served] == reference_scores(X, y, probe)


def test_every_checkpoint_corrupt_is_a_loud_failure_not_a_silent_reset(stack: Stack) -> None:
    assert stack.http.put("/models/m", json=CONFIG).status_code == 201
    X, y = examples(200, seed=4)
    for x, label in zip(X, y, strict=True):
        label_one(stack, x, label)
    stack.service.stop()
    for index in range(redis.Redis.from_url(stack.redis.url).llen(INDEX)):
        corrupt(stack.redis.url, index)
    stack.service.start()
    info = stack.http.get("/models/m").json()
    assert info["status"] == "failed" and "checkpoint" in info["failure"]
    refused = stack.http.post("/predict", json={"model": "m", "features": X[0]})
    assert refused.status_code == 503 and "cannot serve" in refused.json()["detail"][0]["msg"]
    replaced = stack.http.put("/models/m", json=CONFIG, params={"replace": "true"})  # start it afresh
    assert replaced.status_code == 200 and replaced.json()["generation"] == 2
