"""The baseline of the service-load benchmark: a FastAPI app that does nothing.

Served by the same server as the service with the same settings (``bench/service_load.py``
starts both the same way), ``POST /predict`` validates the JSON body against a pydantic model
of the request's shape (a model name and a list of numbers) and answers a constant prediction
as JSON: what FastAPI and the server cost before any of our schemas, checks, scoring or
storage. ``POST /feedback`` does the same for a label (``{prediction_id, label}``). ``WS /ws``
is the same for the WebSocket: each text message is validated against a pydantic model of a
predict message's shape and answered at once with a constant reply in the service's envelope
(``{"id", "type", "ok", "status", "result"}``), one message after another. FastAPI's native
OpenTelemetry is off, as it is in the service by default (``ACOG_OPENTELEMETRY``).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from pydantic import BaseModel

app = FastAPI(telemetry={"tracing": False, "metrics": False, "logs": False})
REPLY = {
    "prediction_id": "noop:1:0-0",
    "label": 1,
    "score": 0.0,
    "model": "noop",
    "model_version": 0,
    "stored": True,
    "ignored_features": [],
}

FEEDBACK = {
    "model": "noop",
    "applied": True,
    "duplicate": False,
    "updated": True,
    "model_version": 1,
    "delay_seconds": 0.0,
    "status": 200,
    "error": None,
    "ignored_features": [],
}


class Body(BaseModel):
    model: str | None = None
    features: list[float] | None = None


@app.post("/predict")
async def predict(body: Body) -> dict[str, Any]:
    return REPLY


class Label(BaseModel):
    prediction_id: str
    label: int


@app.post("/feedback")
async def feedback(body: Label) -> dict[str, Any]:
    return {**FEEDBACK, "prediction_id": body.prediction_id}


class Message(Body):
    type: str
    id: Any = None


@app.websocket("/ws")
async def stream(websocket: WebSocket) -> None:
    await websocket.accept()
    result = json.dumps(REPLY)
    try:
        while True:
            message = Message.model_validate_json(await websocket.receive_text())
            head = f'{{"id": {json.dumps(message.id)}, "type": {json.dumps(message.type)}'
            await websocket.send_text(f'{head}, "ok": true, "status": 200, "result": {result}}}')
    except WebSocketDisconnect:
        pass


@app.get("/readyz")
async def readyz() -> dict[str, str]:
    return {"status": "ready"}
