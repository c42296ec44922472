"""``POST /predict``: score now, keep the prediction for its label window, answer.

Served by :class:`~service.api.hot.HotRoutes` (:data:`ROUTE`); the route declared here is what
the OpenAPI document describes, and answers the same way when reached through FastAPI.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import TypeAdapter

from ..engine import Engine, Scored
from .auth import require_key
from .hot import HotRoute, encode, engine_of
from .responses import KEY, refusals
from .schemas import PredictBatchOut, PredictionOut, PredictRequest, features_payload

router = APIRouter(tags=["predictions"], dependencies=[Depends(require_key)])


@router.post(
    "/predict",
    response_model=PredictionOut | PredictBatchOut,
    responses=refusals(
        *KEY, 400, 404, 413, 422, 503, _422="invalid features (the field and the problem are named)"
    ),
)
async def predict(body: PredictRequest, request: Request) -> Response:
    """Score ``sign(mu . x)`` (+1 = anomaly) for one instance (``features``) or a batch (``instances``)."""
    request.state.model = model_of(body)
    reply = await answer_predict(engine_of(request.scope), body)
    return Response(encode(reply), media_type="application/json")


def model_of(body: PredictRequest) -> str:
    """The model a request names (the ``model`` label of its timing)."""
    return body.model or ""


async def answer_predict(engine: Engine, body: PredictRequest) -> PredictionOut | PredictBatchOut:
    """The reply to a predict request (REST and the WebSocket)."""
    scored = start_predict(engine, body)
    await scored.settled()
    return finish_predict(engine, body, scored)


def start_predict(engine: Engine, body: PredictRequest) -> Scored:
    """Score a predict request now (its refusals raise here); the reply is :func:`finish_predict`'s
    once ``stored`` is done."""
    payloads = [body.features] if body.features is not None else list(body.instances or [])
    return engine.start_predict(body.model, [features_payload(p) for p in payloads])


def finish_predict(engine: Engine, body: PredictRequest, scored: Scored) -> PredictionOut | PredictBatchOut:
    """The reply to a predict request scored by :func:`start_predict`, once its predictions are stored."""
    predictions, stored = engine.finish_predict(scored)
    zero_one = bool(predictions) and engine.label_format(predictions[0].model) == "zero_one"
    negative: Literal[-1, 0] = 0 if zero_one else -1
    # built by pydantic-core's validation, which costs less than model_construct's Python loop
    out = [
        PredictionOut(
            prediction_id=p.prediction_id,
            label=1 if p.label == 1 else negative,
            score=p.score,
            model=p.model,
            model_version=p.model_version,
            stored=stored,
            ignored_features=list(p.ignored),
        )
        for p in predictions
    ]
    return out[0] if body.features is not None else PredictBatchOut(predictions=out)


ROUTE = HotRoute("/predict", TypeAdapter(PredictRequest), answer_predict, model_of)
