"""The baseline of the service-load benchmark: a FastAPI app that does nothing.

Served by uvicorn with the service's own settings (``bench/service_load.py`` starts both
the same way), ``POST /predict`` parses the JSON body and answers a constant prediction:
what FastAPI + uvicorn cost before any of our schemas, checks, scoring or storage. FastAPI's
native OpenTelemetry is off, as it is in the service by default (``ACOG_OPENTELEMETRY``).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

app = FastAPI(telemetry={"tracing": False, "metrics": False, "logs": False})
REPLY = {
    "prediction_id": "noop:1:0-0",
    "label": 1,
    "score": 0.0,
    "model": "noop",
    "model_version": 0,
    "stored": True,
}


@app.post("/predict")
async def predict(body: dict[str, Any]) -> dict[str, Any]:
    return REPLY


@app.get("/readyz")
async def readyz() -> dict[str, str]:
    return {"status": "ready"}
