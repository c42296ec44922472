"""The messages of ``WS /ws`` as pydantic models: the REST bodies with ``type`` and ``id``, and
the two reply envelopes. :mod:`service.asyncapi` writes ``asyncapi.yaml`` from them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .schemas import (
    FeedbackBatchOut,
    FeedbackOut,
    FeedbackRequest,
    PredictBatchOut,
    PredictionOut,
    PredictRequest,
)

MessageId = Any
"""Any JSON value; echoed as sent (bounded like a 422's ``input`` if large or deeply nested)."""


class PredictMessage(PredictRequest):
    """``POST /predict``'s body, with ``"type": "predict"`` and an ``id`` the reply echoes."""

    model_config = ConfigDict(extra="forbid", title="PredictMessage")
    type: Literal["predict"]
    id: MessageId = Field(None, description="echoed in the reply; any JSON value")


class FeedbackMessage(FeedbackRequest):
    """``POST /feedback``'s body, with ``"type": "feedback"`` and an ``id`` the reply echoes."""

    model_config = ConfigDict(extra="forbid", title="FeedbackMessage")
    type: Literal["feedback"]
    id: MessageId = Field(None, description="echoed in the reply; any JSON value")


class PredictReply(BaseModel):
    """The answer to a ``predict`` message: ``result`` is what ``POST /predict`` answers."""

    id: MessageId
    type: Literal["predict"]
    ok: Literal[True]
    status: Literal[200]
    result: PredictionOut | PredictBatchOut


class FeedbackReply(BaseModel):
    """The answer to a ``feedback`` message: ``result`` is what ``POST /feedback`` answers."""

    id: MessageId
    type: Literal["feedback"]
    ok: Literal[True]
    status: Literal[200]
    result: FeedbackOut | FeedbackBatchOut


class ErrorItem(BaseModel):
    loc: list[str | int] = Field(description="where: the field's path in the message")
    msg: str
    type: str = Field(description="the kind of problem: finite_number, unknown, store_unavailable, ...")


class ErrorReply(BaseModel):
    """A refusal: the HTTP status the same request would get, and FastAPI's ``detail`` list.
    ``type`` and ``id`` are echoed when the message was a JSON object, else null."""

    id: MessageId
    type: Any = Field(description='"predict", "feedback", or whatever the message said (null if none)')
    ok: Literal[False]
    status: int = Field(
        description="400/404/409/410/413/422 final; 429 and 503: send the same message again after "
        "retry_after seconds"
    )
    detail: list[ErrorItem] = Field(min_length=1)
    retry_after: int | None = Field(
        None,
        ge=1,
        description="with a 503 or a 429: seconds to wait before sending the same message again "
        "(what REST sends as Retry-After); absent otherwise",
    )
