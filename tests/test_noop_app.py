"""The service-load benchmark's baseline (bench/noop_app.py), served by uvicorn as the benchmark
serves it, answers what the service answers, in the service's shapes: a comparison against it
weighs the service's own work, not a thinner reply; and the load generator's WebSocket client
(bench/loadgen.py) gets every answer from it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from bench.loadgen import websocket
from bench.service_load import Server, start_noop
from service.api.schemas import FeedbackOut, PredictionOut


@pytest.fixture(scope="module")
def noop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_noop("uvicorn", Path(tmp_path_factory.mktemp("noop")))
    yield server
    server.close()


def test_predict_validates_the_body_and_answers_a_prediction(noop: Server) -> None:
    reply = httpx.post(f"{noop.url}/predict", json={"model": "default", "features": [0.0, 1.5, 2]})
    assert reply.status_code == 200
    assert set(reply.json()) == set(PredictionOut.model_fields)
    assert httpx.post(f"{noop.url}/predict", json={"features": "not a list"}).status_code == 422


def test_feedback_validates_the_label_and_answers_an_outcome(noop: Server) -> None:
    reply = httpx.post(f"{noop.url}/feedback", json={"prediction_id": "default:1:abc", "label": -1})
    assert reply.status_code == 200
    assert set(reply.json()) == set(FeedbackOut.model_fields)
    assert reply.json()["prediction_id"] == "default:1:abc"
    assert httpx.post(f"{noop.url}/feedback", json={"label": 1}).status_code == 422


def test_websocket_answers_each_message_in_the_service_envelope(noop: Server) -> None:
    with connect(noop.ws_url) as ws:
        for i in range(3):
            ws.send(json.dumps({"type": "predict", "id": i, "model": "default", "features": [1.0, 2.0]}))
            reply = json.loads(ws.recv(timeout=10))
            assert {k: reply[k] for k in ("id", "type", "ok", "status")} == {
                "id": i,
                "type": "predict",
                "ok": True,
                "status": 200,
            }
            assert set(reply["result"]) == set(PredictionOut.model_fields)


def test_the_load_generators_websocket_run_answers_every_message_once(noop: Server) -> None:
    messages = [
        json.dumps({"type": "predict", "id": i, "model": "default", "features": [0.5] * (i % 300)})
        for i in range(3000)
    ]
    result = asyncio.run(websocket(noop.ws_url, messages, window=64))
    assert (result["count"], result["errors"]) == (3000, 0)
    assert result["messages_per_second"] > 0 and result["p50"] <= result["max"]
