"""``POST /predict``: score now, keep the prediction for its label window, answer."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from ..engine import Engine
from .auth import require_key
from .dependencies import tag_model
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
    tag_model(request, body.model)
    reply = await answer_predict(request.app.state.engine, body)
    # Serialised once by pydantic: the reply is built from validated values, so FastAPI's
    # second validation of the response model (measured at a few % of a request) is skipped.
    return Response(reply.model_dump_json(), media_type="application/json")


async def answer_predict(engine: Engine, body: PredictRequest) -> PredictionOut | PredictBatchOut:
    """The reply to a predict request (shared by REST and the WebSocket)."""
    payloads = [body.features] if body.features is not None else list(body.instances or [])
    predictions, stored = await engine.predict(body.model, [features_payload(p) for p in payloads])
    negative = 0 if predictions and engine.label_format(predictions[0].model) == "zero_one" else -1
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
