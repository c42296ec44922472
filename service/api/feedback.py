"""``POST /feedback``: a label for an earlier prediction (or for an example never scored).

The flow of docs/data-flow.md, in order: look up the prediction, append the self-contained event to
the model's label log, apply the log in stream order, reply. All of it happens in the
engine; an answered label is durable and already learned.

Served by :class:`~service.api.hot.HotRoutes` (:data:`ROUTE`); the route declared here is what
the OpenAPI document describes, and answers the same way when reached through FastAPI.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from pydantic import TypeAdapter

from ..engine import Engine, FeedbackResult, LabelItem
from .auth import require_key
from .errors import status_of
from .hot import HotRoute, encode, engine_of
from .responses import KEY, refusals
from .schemas import FeedbackBatchOut, FeedbackOut, FeedbackRequest, features_payload

router = APIRouter(tags=["labels"], dependencies=[Depends(require_key)])


def _out(result: FeedbackResult) -> FeedbackOut:
    # built by pydantic-core's validation, which costs less than model_construct's Python loop
    return FeedbackOut(
        prediction_id=result.prediction_id,
        model=result.model,
        applied=result.applied,
        duplicate=result.duplicate,
        updated=result.updated,
        model_version=result.model_version,
        delay_seconds=result.delay_seconds,
        status=200 if result.error is None else status_of(result.error),
        error=None if result.error is None else str(result.error),
        ignored_features=list(result.ignored),
    )


@router.post(
    "/feedback",
    response_model=FeedbackOut | FeedbackBatchOut,
    responses=refusals(
        *KEY,
        400,
        404,
        409,
        410,
        413,
        422,
        503,
        _404="unknown or expired prediction id, or unknown model (the reason is given)",
        _409="the prediction id was labelled before with another value (label_conflict)",
        _410="the prediction's model was replaced or deleted (model_gone)",
        _422="invalid label or features (nothing was applied)",
        _503="store or model unavailable: the outcome is unknown; retry the same request after "
        "Retry-After (a label retried with the same id and value answers the first outcome)",
    ),
)
async def feedback(body: FeedbackRequest, request: Request) -> Response:
    """Apply labels. A prediction id counts once: a retry with the same value answers the first
    outcome again (``duplicate: true``); another value is a 409 ``label_conflict``."""
    request.state.model = model_of(body)
    reply = await answer_feedback(engine_of(request.scope), body)
    return Response(encode(reply), media_type="application/json")


def model_of(body: FeedbackRequest) -> str:
    """The model a request is about (the ``model`` label of its timing): the one it names, or
    the one its (first) prediction id names."""
    first = body.prediction_id if body.items is None else body.items[0].prediction_id
    return body.model or (first or "").split(":", 1)[0]


def label_items(body: FeedbackRequest) -> list[LabelItem]:
    """The labels of a request for earlier predictions, each prediction id read once, here."""
    if body.items is None:
        return [] if body.prediction_id is None else [LabelItem.read(body.prediction_id, body.label)]
    if body.model is not None:
        return []
    return [LabelItem.read(i.prediction_id or "", i.label) for i in body.items]


async def answer_feedback(
    engine: Engine, body: FeedbackRequest, labels: list[LabelItem] | None = None
) -> FeedbackOut | FeedbackBatchOut:
    """The reply to a feedback request (REST and the WebSocket); ``labels`` are its
    :func:`label_items` when the caller read them already.

    A single label that cannot be applied raises its error (404, 410, ...); in a batch each
    item carries its own ``status`` and ``error``.
    """
    labels = label_items(body) if labels is None else labels
    if body.items is None:
        if body.prediction_id is not None:
            [result] = await engine.feedback(labels)
        else:
            assert body.model is not None and body.features is not None
            [result] = await engine.feedback_examples(
                body.model, [(features_payload(body.features), body.label)]
            )
        if result.error is not None:
            raise result.error
        return _out(result)
    if body.model is not None:
        pairs = [(features_payload(i.features), i.label) for i in body.items if i.features is not None]
        results = await engine.feedback_examples(body.model, pairs)
    else:
        results = await engine.feedback(labels)
    return FeedbackBatchOut(results=[_out(r) for r in results])


ROUTE = HotRoute("/feedback", TypeAdapter(FeedbackRequest), answer_feedback, model_of)
