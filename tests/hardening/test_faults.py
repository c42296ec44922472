"""Faults the recovery suite does not cover: a slow Redis, SIGTERM under load and with an open
WebSocket, a full disk under the embedded store, and labels that come twice at once, after the
duplicate window, or for a model deleted or replaced before a restart.

(tests/recovery covers Redis stopped and restarted under load, kill -9 anywhere, corrupt
checkpoints; tests/e2e covers duplicates, expired ids, out-of-order labels and labels for
replaced or deleted models while the service runs.)
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import redis
from websockets.sync.client import connect

from service.model_config import ModelConfig

from ..e2e.client import Running, assert_refused
from ..support.model_state import served
from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess
from .conftest import CONFIG, PROBE, N, snapshot, start, train

TIMEOUT = 1.0
RETRIES = 1
BOUND = (1 + RETRIES) * TIMEOUT + 0.5 * RETRIES
"""The longest a request may wait for a Redis that does not answer, by the settings above."""


def rows(n: int, seed: int) -> tuple[list[list[float]], list[int]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0.3, 1, -1)
    return X.tolist(), [int(v) for v in y]


def reference_scores(X: list[list[float]], y: list[int], probe: list[list[float]]) -> list[float]:
    """What the learner library scores after learning the stream in order, uninterrupted."""
    learner = ModelConfig.model_validate(CONFIG).build_learner()
    for x, label in zip(X, y, strict=True):
        learner.learn(served(CONFIG, x), label)
    return [learner.score(served(CONFIG, x)) for x in probe]


# --- a slow Redis ---------------------------------------------------------------------------


@pytest.fixture
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    directory = tmp_path_factory.mktemp("slow-redis")
    server = PrivateRedis(directory)
    server.start()
    env = {
        "ACOG_REDIS_URL": server.url,
        "ACOG_REDIS_TIMEOUT_SECONDS": str(TIMEOUT),
        "ACOG_REDIS_RETRIES": str(RETRIES),
    }
    try:
        with start(tmp_path_factory, "slow", env, server) as run:
            yield run
    finally:
        server.close()


def timed(call: Any) -> tuple[httpx.Response, float]:
    began = time.monotonic()
    response = call()
    return response, time.monotonic() - began


def test_a_slow_redis_is_503_with_retry_after_within_the_socket_timeout(slow: Running) -> None:
    api = slow.api
    assert slow.redis is not None
    train(api, "slow")
    waiting = api.predict_one("slow", PROBE[0])
    before = snapshot(api, "slow")
    pause = redis.Redis(port=slow.redis.port)
    pause.execute_command("CLIENT", "PAUSE", int((4 * BOUND + 2) * 1000), "ALL")
    try:
        body = {"prediction_id": waiting["prediction_id"], "label": 1}
        label, took = timed(lambda: api.http.post("/feedback", json=body))
        assert_refused(label, 503, "store", "the outcome is unknown: retry the same request")
        assert int(label.headers["retry-after"]) >= 1
        assert took < BOUND + 1.0, f"the label waited {took:.1f} s, over {BOUND} s"
        predicted, took = timed(
            lambda: api.http.post("/predict", json={"model": "slow", "features": PROBE[1]})
        )
        assert predicted.status_code == 200 and predicted.json()["stored"] is False, predicted.text
        assert took < BOUND + 1.0
        ready, took = timed(lambda: api.http.get("/readyz"))
        assert ready.status_code == 503 and took < BOUND + 1.0
        alive, took = timed(lambda: api.http.get("/healthz"))
        assert alive.status_code == 200 and took < 0.5
        described = api.http.get("/models/slow")  # reads are served from memory
        assert described.status_code == 200 and described.json()["state"]["version"] == before[1]["version"]
    finally:
        pause.execute_command("CLIENT", "UNPAUSE")
        pause.close()
    assert snapshot(api, "slow") == before  # the refused label changed nothing
    # the label the client retries (same prediction id) counts exactly once
    retried = api.label(waiting["prediction_id"], 1)
    assert retried["applied"] or retried["duplicate"], retried
    assert api.state("slow")["version"] == before[1]["version"] + 1
    assert api.label(waiting["prediction_id"], 1)["duplicate"] is True


# --- SIGTERM --------------------------------------------------------------------------------


@pytest.fixture
def terminable(tmp_path: Path) -> Iterator[tuple[ServiceProcess, PrivateRedis]]:
    server = PrivateRedis(tmp_path, appendfsync="always")
    server.start()
    service = ServiceProcess(tmp_path, {"ACOG_REDIS_URL": server.url, "ACOG_CHECKPOINT_EVERY_EVENTS": "40"})
    service.start()
    try:
        yield service, server
    finally:
        service.kill()
        server.close()


def test_sigterm_under_load_loses_no_acknowledged_label(
    terminable: tuple[ServiceProcess, PrivateRedis],
) -> None:
    service, _ = terminable
    assert httpx.put(f"{service.url}/models/m", json=CONFIG).status_code == 201
    X, y = rows(240, seed=5)
    acknowledged: list[int] = []
    statuses: set[int] = set()

    def client() -> None:
        """A correct client: retries a label with the same prediction id; predicts again only
        when its prediction was not stored."""
        with httpx.Client(base_url=service.url, timeout=10) as http:
            for i, (x, label) in enumerate(zip(X, y, strict=True)):
                pid = None
                while pid is None:
                    with contextlib.suppress(httpx.TransportError, ValueError, KeyError):
                        p = http.post("/predict", json={"model": "m", "features": x})
                        statuses.add(p.status_code)
                        pid = p.json()["prediction_id"] if p.json().get("stored") else None
                    time.sleep(0 if pid else 0.05)
                while True:
                    with contextlib.suppress(httpx.TransportError):
                        answer = http.post("/feedback", json={"prediction_id": pid, "label": label})
                        statuses.add(answer.status_code)
                        if answer.status_code == 200:
                            acknowledged.append(i)
                            break
                    time.sleep(0.05)

    thread = threading.Thread(target=client)
    thread.start()
    for _ in range(2):  # two clean shutdowns while labels stream in
        time.sleep(0.7)
        code = service.stop()
        assert code in (0, -15), service.log()
        assert "no checkpoint at shutdown" not in service.log()
        service.start()
    thread.join(120)
    assert not thread.is_alive()
    assert acknowledged == list(range(len(X)))
    assert statuses <= {200, 503}, statuses
    info = httpx.get(f"{service.url}/models/m").json()
    assert info["state"]["version"] == len(X)
    served = httpx.post(f"{service.url}/predict", json={"model": "m", "instances": PROBE}).json()[
        "predictions"
    ]
    assert [p["score"] for p in served] == reference_scores(X, y, PROBE)


def test_sigterm_with_an_open_websocket_shuts_down_promptly(
    terminable: tuple[ServiceProcess, PrivateRedis],
) -> None:
    service, _ = terminable
    assert httpx.put(f"{service.url}/models/m", json=CONFIG).status_code == 201
    with connect(service.ws_url) as ws:
        ws.send(json.dumps({"type": "predict", "id": 1, "model": "m", "features": PROBE[0]}))
        assert json.loads(ws.recv(timeout=10))["ok"]
        began = time.monotonic()
        assert service.stop() in (0, -15)
        took = time.monotonic() - began
    assert took < 5, f"shutdown took {took:.1f} s with a WebSocket open"
    assert "Finished server process" in service.log()


# --- a full disk under the embedded store --------------------------------------------------


@contextlib.contextmanager
def tiny_filesystem(path: Path, size: str = "4m") -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.strip()}); needs root")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(directory: Path, leave_bytes: int) -> Path:
    ballast = directory / "ballast"
    free = shutil.disk_usage(directory).free
    with ballast.open("wb") as out:
        out.write(b"\0" * max(0, free - leave_bytes))
    return ballast


def test_a_full_disk_is_503_and_corrupts_no_checkpoint(tmp_path: Path) -> None:
    """The embedded store's directory on a 4 MB tmpfs, filled up: labels are refused with 503
    (Redis refuses writes it cannot append to its file), predictions are answered from memory
    (``stored: false``), a checkpoint is refused and the old ones stay; once space is freed,
    the refused label is retried and counted once, and a restart ends in the same state."""
    with tiny_filesystem(tmp_path / "disk") as disk:
        service = ServiceProcess(tmp_path, {"ACOG_DATA_DIR": str(disk / "data"), "ACOG_REDIS_URL": ""})
        service.start()
        http = httpx.Client(base_url=service.url, timeout=30)
        try:
            assert http.put("/models/m", json=CONFIG).status_code == 201
            X, y = rows(200, seed=7)
            stored = http.post("/predict", json={"model": "m", "instances": X[:150]}).json()["predictions"]
            pids = [p["prediction_id"] for p in stored]
            for i in range(30):
                assert http.post("/feedback", json={"prediction_id": pids[i], "label": y[i]}).is_success
            assert http.post("/models/m/checkpoint").json()["written"] is True
            ballast = fill(disk, leave_bytes=8192)

            learned, refused_at = list(range(30)), None
            for i in range(30, 150):
                before = http.get("/models/m").json()["state"]
                answer = http.post("/feedback", json={"prediction_id": pids[i], "label": y[i]})
                if answer.status_code == 200:
                    learned.append(i)
                    continue
                assert_refused(answer, 503, "store", "No space left on device")
                assert int(answer.headers["retry-after"]) >= 1
                assert http.get("/models/m").json()["state"] == before  # nothing half-applied
                refused_at = i
                break
            assert refused_at is not None, "the disk never filled"
            predicted = http.post("/predict", json={"model": "m", "features": X[160]})
            assert predicted.status_code == 200 and predicted.json()["stored"] is False, predicted.text
            checkpoint = http.post("/models/m/checkpoint")
            assert_refused(checkpoint, 503, "store", "retry the same request")
            assert http.get("/readyz").status_code == 503
            assert http.get("/healthz").status_code == 200

            ballast.unlink()  # space again: Redis retries its append-only file and carries on
            deadline = time.monotonic() + 15
            while http.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, "the store did not recover once space was freed"
                time.sleep(0.2)
            for i in range(refused_at, refused_at + 20):  # the refused label first, retried as is
                answer = http.post("/feedback", json={"prediction_id": pids[i], "label": y[i]})
                assert answer.status_code == 200 and answer.json()["applied"], answer.text
                learned.append(i)
            http.close()
            assert service.stop() in (0, -15)  # a clean shutdown writes a checkpoint
            service.start()
            assert "unusable" not in service.log()
            info = httpx.get(f"{service.url}/models/m").json()
            assert info["status"] == "serving" and info["state"]["version"] == len(learned)
            assert info["state"]["checkpoint"]["version"] == len(learned)
            served = httpx.post(f"{service.url}/predict", json={"model": "m", "instances": PROBE}).json()
            expected = reference_scores([X[k] for k in learned], [y[k] for k in learned], PROBE)
            assert [p["score"] for p in served["predictions"]] == expected
        finally:
            http.close()
            try:  # SIGTERM: the service also shuts its embedded Redis down
                service.stop()
            except Exception:
                service.kill()


# --- labels: twice at once, after the duplicate window, after a restart ---------------------


@pytest.fixture(scope="module")
def labels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    env = {"ACOG_LABEL_TTL_SECONDS": "3", "ACOG_DUPLICATE_TTL_SECONDS": "3"}
    with start(tmp_path_factory, "labels", env) as run:  # the embedded store
        yield run


def test_the_same_label_sent_concurrently_counts_once(labels: Running) -> None:
    api = labels.api
    train(api, "twice")
    version = api.state("twice")["version"]
    predictions = api.predict("twice", PROBE)
    url = labels.service.url

    def send(pid: str) -> dict[str, Any]:
        with httpx.Client(base_url=url, timeout=30) as http:
            answer = http.post("/feedback", json={"prediction_id": pid, "label": 1})
            assert answer.status_code == 200, answer.text
            return dict(answer.json())

    pids = [p["prediction_id"] for p in predictions] * 4
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, pids))
    for pid in {p["prediction_id"] for p in predictions}:
        mine = [a for a in answers if a["prediction_id"] == pid]
        first = [a for a in mine if not a["duplicate"]]
        assert len(first) == 1 and sum(a["duplicate"] for a in mine) == 3, mine
        # every retry answers the first outcome: the same entry of the log
        assert all(a["applied"] and a["model_version"] == first[0]["model_version"] for a in mine), mine
    assert api.state("twice")["version"] == version + len(PROBE)


def test_a_label_after_the_duplicate_window_is_expired_and_changes_nothing(labels: Running) -> None:
    api = labels.api
    train(api, "window")
    pid = api.predict_one("window", PROBE[0])["prediction_id"]
    assert api.label(pid, 1)["applied"]
    assert api.label(pid, 1)["duplicate"]
    before = api.state("window")
    time.sleep(3.6)  # past the label window and the duplicate window
    response = api.http.post("/feedback", json={"prediction_id": pid, "label": 1})
    assert_refused(response, 404, "prediction_id", "expired")
    assert api.state("window") == before


def test_labels_for_a_deleted_or_replaced_model_after_a_restart(labels: Running) -> None:
    api = labels.api
    train(api, "replaced")
    train(api, "deleted")
    old = api.predict_one("replaced", PROBE[0])["prediction_id"]
    gone = api.predict_one("deleted", PROBE[0])["prediction_id"]
    api.put_model("replaced", CONFIG, expect=200, replace=True)
    api.delete_model("deleted")
    labels.restart()
    response = api.http.post("/feedback", json={"prediction_id": old, "label": 1})
    assert_refused(response, 410, "prediction_id", "replaced")
    # a deletion is remembered by the store (the generation counter outlives the model): still 410
    response = api.http.post("/feedback", json={"prediction_id": gone, "label": 1})
    assert_refused(response, 410, "prediction_id", "deleted")
    assert api.state("replaced")["version"] == 0
    assert api.http.get("/models/deleted").status_code == 404
