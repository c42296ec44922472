"""Every refusal as ``{"detail": [{"loc", "msg", "type"}]}``, FastAPI's own 4xx shape, so a
client reads the field and the problem the same way whatever refused the request (a 401 or
403 of the key check, a body that is not JSON, an unknown route included).

A 422 echoes the offending ``input`` only in a bounded form (see :func:`json_safe`): a
10^6-element vector or a deeply nested array is summarised, not sent back whole.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from model_store import StoreError

from ..engine import (
    EngineError,
    InvalidRequest,
    LabelConflict,
    LimitExceeded,
    ModelConflict,
    ModelGone,
    ModelUnavailable,
    StoreFailure,
    StoreLost,
    TooLarge,
    UnknownModel,
    UnknownPrediction,
    store_failure,
)

STATUS: dict[type[EngineError], int] = {
    UnknownModel: 404,
    UnknownPrediction: 404,
    ModelGone: 410,
    InvalidRequest: 422,
    LimitExceeded: 422,
    TooLarge: 413,
    LabelConflict: 409,
    ModelConflict: 409,
    ModelUnavailable: 503,
    StoreLost: 503,
    StoreFailure: 503,
}
"""The HTTP status of each engine refusal (REST and the WebSocket answer with it); the engine
itself knows nothing of HTTP."""


def status_of(error: EngineError) -> int:
    """The HTTP status ``error`` is answered with: its own type's, else its nearest base's."""
    for kind in type(error).__mro__:
        status = STATUS.get(kind)
        if status is not None:
            return status
    return 400


def detail(field: str, message: str, kind: str, where: str = "body") -> dict[str, Any]:
    return {"detail": [{"loc": [where, *field.split(".")], "msg": message, "type": kind}]}


def engine_error_response(error: EngineError, where: str = "body") -> JSONResponse:
    """An engine refusal: the status of its type (:data:`STATUS`), and its kind and retry advice
    (see :mod:`service.engine.errors`)."""
    seconds = error.retry_after_seconds
    return JSONResponse(
        detail(error.field, error.problem, error.kind, where),
        status_code=status_of(error),
        headers=None if seconds is None else {"Retry-After": str(seconds)},
    )


ECHO_DEPTH = 3
"""How deep a 422 echoes a container of the offending input."""
ECHO_ITEMS = 16
"""How many items of a list or object a 422 echoes."""
ECHO_CHARS = 200
"""How many characters of a string a 422 echoes."""


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` bounded and with NaN and infinities spelled as strings, so that it can be sent
    as JSON.

    A 422 echoes the offending ``input``; when that input was ``NaN`` or ``Infinity`` (which
    Python's JSON parser reads), strict JSON cannot carry it back, and FastAPI's own handler
    would fail with a 500 instead of refusing the request. Containers deeper than
    :data:`ECHO_DEPTH` or longer than :data:`ECHO_ITEMS` are summarised: a deeply nested array
    would otherwise overflow the encoder's recursion (a 500), and a 10^6-element vector would be
    sent back several times over.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bytes | bytearray):
        value = bytes(value[: ECHO_CHARS * 4]).decode("utf-8", errors="replace")
    if isinstance(value, str) and len(value) > ECHO_CHARS:
        return value[:ECHO_CHARS] + f"... ({len(value)} characters)"
    if isinstance(value, dict | list | tuple):
        kind = "object" if isinstance(value, dict) else "array"
        if depth >= ECHO_DEPTH or len(value) > ECHO_ITEMS:
            return f"<an {kind} of {len(value)} items>"
        if isinstance(value, dict):
            return {str(k)[:ECHO_CHARS]: json_safe(v, depth + 1) for k, v in value.items()}
        return [json_safe(v, depth + 1) for v in value]
    return value


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def bounded_errors(errors: Any) -> list[dict[str, Any]]:
    """Pydantic's error list, made JSON-safe without recursing into the inputs it echoes."""
    out = []
    for error in errors:
        item = {k: v for k, v in dict(error).items() if k not in ("input", "ctx", "url")}
        item["loc"] = [part if isinstance(part, int | str) else str(part) for part in item.get("loc", ())]
        if "input" in error:
            item["input"] = json_safe(error["input"])
        if error.get("ctx"):
            item["ctx"] = {
                str(k): json_safe(v) if _scalar(v) else str(v)[:ECHO_CHARS] for k, v in error["ctx"].items()
            }
        out.append(item)
    return out


def _http_error_location(status: int) -> list[str]:
    if status in (401, 403):
        return ["header", "Authorization"]
    if status == 400:
        return ["body"]
    if status == 405:
        return ["method"]
    return ["path"]


def install(app: FastAPI) -> None:
    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return JSONResponse({"detail": bounded_errors(exc.errors())}, status_code=422)

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        """Starlette's and FastAPI's own refusals (401/403 of the key check, 400 for a body that
        cannot be parsed, 404/405 for unknown routes) in the same shape as every other one."""
        assert isinstance(exc, StarletteHTTPException)
        body: Any = exc.detail
        if not isinstance(body, list):
            kind = {400: "body_unreadable", 401: "unauthorized", 403: "forbidden"}.get(
                exc.status_code, "http"
            )
            body = [{"loc": _http_error_location(exc.status_code), "msg": str(body), "type": kind}]
        return JSONResponse({"detail": body}, status_code=exc.status_code, headers=exc.headers)

    async def on_engine_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, EngineError)
        where = {"name": "path", "if_generation": "query"}.get(exc.field, "body")
        return engine_error_response(exc, where)

    async def on_store_unavailable(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StoreError)
        return engine_error_response(store_failure(exc), "server")

    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(EngineError, on_engine_error)
    app.add_exception_handler(StoreError, on_store_unavailable)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
