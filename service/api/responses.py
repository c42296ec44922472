"""Every refusal a route can answer, declared for the OpenAPI document with the one error shape
(:mod:`service.api.errors`): ``{"detail": [{"loc", "msg", "type"}]}``, and ``Retry-After`` where
the refusal is worth retrying. A route lists the statuses it gives with :func:`refusals`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ErrorItem(BaseModel):
    model_config = ConfigDict(extra="allow")  # a 422 also echoes the bounded input and context

    loc: list[str | int] = Field(description="where: header, path, query or body, then the field's path")
    msg: str
    type: str = Field(description="the kind of problem: unknown_model, store_unavailable, ...")


class ErrorBody(BaseModel):
    detail: list[ErrorItem] = Field(min_length=1)


RETRY_AFTER = {
    "Retry-After": {
        "description": "whole seconds to wait before sending the same request again",
        "schema": {"type": "integer", "minimum": 1},
    }
}

DESCRIPTIONS: dict[int, str] = {
    400: "the body cannot be read (body_unreadable)",
    401: "no API key, or an unknown one, while keys are configured (unauthorized)",
    403: "an API key that is not an admin key, on an admin route (forbidden)",
    404: "unknown model (unknown_model)",
    409: "the change conflicts with another one (model_conflict)",
    410: "the model was replaced or deleted meanwhile (model_gone)",
    413: "a batch or a body over the configured limits (limit_exceeded)",
    422: "invalid request: the field and the problem are named",
    503: "the store is unavailable (store_unavailable, store_error: the outcome is unknown, retry the same "
    "request) or lost (store_lost), or the model cannot serve yet (model_unavailable)",
}
RETRIED = {503}


def refusals(*statuses: int, **described: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these statuses, each with the error shape; ``described`` overrides a
    status's description (``_409="..."``)."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        response: dict[str, Any] = {
            "model": ErrorBody,
            "description": described.get(f"_{status}", DESCRIPTIONS[status]),
        }
        if status in RETRIED:
            response["headers"] = RETRY_AFTER
        out[status] = response
    return out


KEY = (401,)
"""What a route behind an API key can answer besides its own refusals."""
ADMIN = (401, 403)
"""What an admin route can answer besides its own refusals."""
