"""``acog serve --server granian``: the same service under Granian, a real process.

Predictions, labels (REST and the WebSocket), the key check, the metrics of the hot routes, and
a clean shutdown (SIGTERM: every model checkpointed, recovered as it was on the next start).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from ..support.private_redis import PrivateRedis
from ..support.service_process import ROOT, ServiceProcess

pytest.importorskip("granian", reason="Granian is not installed (pip install 'acog-service[granian]')")

KEY = "granian-test-key-0123456789"
D = 4


@pytest.fixture(scope="module")
def granian(module_redis: PrivateRedis, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    env = {"ACOG_REDIS_URL": module_redis.url, "ACOG_API_KEYS": KEY, "ACOG_ADMIN_KEYS": KEY + "-admin"}
    service = ServiceProcess(tmp_path_factory.mktemp("granian"), env, args=["--server", "granian"])
    service.start(timeout=180)
    yield service
    service.stop()  # SIGTERM: Granian stops its worker (a SIGKILL would leave the worker running)
    service.kill()


def auth(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_predict_and_label_over_rest_and_the_websocket(granian: ServiceProcess) -> None:
    with httpx.Client(base_url=granian.url, timeout=30) as http:
        put = http.put(
            "/models/g", json={"n_features": D, "eta": 1.0, "loss": "II"}, headers=auth(KEY + "-admin")
        )
        assert put.status_code == 201, put.text
        assert http.post("/predict", json={"model": "g", "features": [1, 0, 0, 0]}).status_code == 401
        one = http.post("/predict", json={"model": "g", "features": [1, 0, 0, 0]}, headers=auth())
        assert one.status_code == 200, one.text
        assert one.headers["content-type"] == "application/json"
        label = http.post(
            "/feedback", json={"prediction_id": one.json()["prediction_id"], "label": -1}, headers=auth()
        )
        assert label.status_code == 200 and label.json()["applied"], label.text
        bad = http.post("/predict", json={"model": "g", "features": [1, 0]}, headers=auth())
        assert bad.status_code == 422 and "features" in bad.text, bad.text
        with connect(granian.ws_url, additional_headers=auth()) as ws:
            # Granian negotiates no compression, whatever ACOG_WS_COMPRESSION says
            assert ws.response.headers.get("Sec-WebSocket-Extensions") is None
            ws.send(json.dumps({"type": "predict", "id": 7, "model": "g", "features": [0, 1, 0, 0]}))
            reply = json.loads(ws.recv(timeout=10))
            assert (reply["id"], reply["ok"], reply["status"]) == (7, True, 200), reply
            pid = reply["result"]["prediction_id"]
            ws.send(json.dumps({"type": "feedback", "id": 8, "prediction_id": pid, "label": 1}))
            reply = json.loads(ws.recv(timeout=10))
            assert reply["ok"] and reply["result"]["applied"], reply
        state = http.get("/models/g", headers=auth()).json()["state"]
        assert state["version"] == 2
        metrics = http.get("/metrics").text
        assert 'acog_http_requests_total{code="200",method="POST",route="/predict"}' in metrics
        assert 'acog_http_requests_total{code="401",method="POST",route="/predict"}' in metrics


def test_sigterm_checkpoints_and_the_next_start_recovers(granian: ServiceProcess) -> None:
    with httpx.Client(base_url=granian.url, timeout=30) as http:
        before = http.get("/models/g", headers=auth()).json()
    code = granian.stop()
    assert code is not None and code in (0, -15), f"exit code {code}:\n{granian.log()}"
    assert "model g: checkpoint at version 2 written" in granian.log(), granian.log()
    granian.start(timeout=180)
    with httpx.Client(base_url=granian.url, timeout=30) as http:
        after = http.get("/models/g", headers=auth()).json()
    assert after["state"]["version"] == before["state"]["version"]
    assert after["generation"] == before["generation"]


def test_workers_stay_uvicorns(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "serve", "--server", "granian", "--workers", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "acog serve: error: --workers takes --server uvicorn (Granian serves one process here)"
    ]
