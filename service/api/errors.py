"""Every refusal as ``{"detail": [{"loc", "msg", "type"}]}``, FastAPI's own 4xx shape, so a
client reads the field and the problem the same way whatever refused the request."""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from model_store import StoreUnavailable

from ..engine import (
    EngineError,
    InvalidRequest,
    LimitExceeded,
    ModelGone,
    ModelUnavailable,
    UnknownModel,
    UnknownPrediction,
)


def status_of(error: EngineError) -> int:
    if isinstance(error, LimitExceeded):
        return error.status
    if isinstance(error, UnknownModel | UnknownPrediction):
        return 404
    if isinstance(error, ModelGone):
        return 410
    if isinstance(error, ModelUnavailable):
        return 503
    if isinstance(error, InvalidRequest):
        return 422
    return 400


KINDS: dict[type[EngineError], str] = {
    UnknownModel: "unknown_model",
    ModelGone: "model_gone",
    ModelUnavailable: "model_unavailable",
    InvalidRequest: "invalid",
    LimitExceeded: "limit_exceeded",
}


def kind_of(error: EngineError) -> str:
    """The ``type`` of the error detail: the reason for unknown ids (``expired``/``unknown``)."""
    reason = getattr(error, "reason", None)
    return str(reason) if reason else KINDS.get(type(error), "error")


def detail(field: str, message: str, kind: str, where: str = "body") -> dict[str, Any]:
    return {"detail": [{"loc": [where, *field.split(".")], "msg": message, "type": kind}]}


def engine_error_response(error: EngineError, where: str = "body") -> JSONResponse:
    return JSONResponse(
        detail(error.field, error.problem, kind_of(error), where), status_code=status_of(error)
    )


def store_unavailable_response(error: StoreUnavailable) -> JSONResponse:
    return JSONResponse(
        detail(
            "store", f"the model store is unavailable ({error}); retry later", "store_unavailable", "server"
        ),
        status_code=503,
        headers={"Retry-After": str(max(1, round(error.retry_after)))},
    )


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities spelled as strings, so that it can be sent as JSON.

    A 422 echoes the offending ``input``; when that input was ``NaN`` or ``Infinity`` (which
    Python's JSON parser reads), strict JSON cannot carry it back, and FastAPI's own handler
    would fail with a 500 instead of refusing the request.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def install(app: FastAPI) -> None:
    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return JSONResponse({"detail": json_safe(jsonable_encoder(exc.errors()))}, status_code=422)

    async def on_engine_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, EngineError)
        return engine_error_response(exc, "path" if exc.field == "name" else "body")

    async def on_store_unavailable(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StoreUnavailable)
        return store_unavailable_response(exc)

    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(EngineError, on_engine_error)
    app.add_exception_handler(StoreUnavailable, on_store_unavailable)
