"""The baseline of the service-load benchmark: a FastAPI app that does nothing.

Served by the same server as the service with the same settings (``bench/service_load.py``
starts both the same way), ``POST /predict`` validates the JSON body against a pydantic model
of the request's shape (a model name and a list of numbers) and answers a constant prediction
as JSON: what FastAPI and the server cost before any of our schemas, checks, scoring or
storage. FastAPI's native OpenTelemetry is off, as it is in the service by default
(``ACOG_OPENTELEMETRY``).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
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


class Body(BaseModel):
    model: str | None = None
    features: list[float] | None = None


@app.post("/predict")
async def predict(body: Body) -> dict[str, Any]:
    return REPLY


@app.get("/readyz")
async def readyz() -> dict[str, str]:
    return {"status": "ready"}
