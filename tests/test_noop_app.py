"""The service-load benchmark's baseline (bench/noop_app.py) answers what the service answers, in
the service's shapes: a comparison against it weighs the service's own work, not a thinner reply."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from bench.noop_app import app
from service.api.schemas import FeedbackOut, PredictionOut

client = TestClient(app)


def test_predict_validates_the_body_and_answers_a_prediction() -> None:
    reply = client.post("/predict", json={"model": "default", "features": [0.0, 1.5, 2]})
    assert reply.status_code == 200
    assert set(reply.json()) == set(PredictionOut.model_fields)
    assert client.post("/predict", json={"features": "not a list"}).status_code == 422


def test_feedback_validates_the_label_and_answers_an_outcome() -> None:
    reply = client.post("/feedback", json={"prediction_id": "default:1:abc", "label": -1})
    assert reply.status_code == 200
    assert set(reply.json()) == set(FeedbackOut.model_fields)
    assert reply.json()["prediction_id"] == "default:1:abc"
    assert client.post("/feedback", json={"label": 1}).status_code == 422


def test_websocket_answers_each_message_in_the_service_envelope() -> None:
    with client.websocket_connect("/ws") as ws:
        for i in range(3):
            ws.send_text(json.dumps({"type": "predict", "id": i, "model": "default", "features": [1.0, 2.0]}))
            reply = json.loads(ws.receive_text())
            assert {k: reply[k] for k in ("id", "type", "ok", "status")} == {
                "id": i,
                "type": "predict",
                "ok": True,
                "status": 200,
            }
            assert set(reply["result"]) == set(PredictionOut.model_fields)
