"""A model's challengers: configurations that learn from its labels in shadow, side by side with it
(``state.challengers`` of ``GET /models/{name}``), and one of them promoted to be the model."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response

from ..challengers import ID_LENGTH, ID_PATTERN
from ..model_config import ModelConfig
from .auth import require_admin
from .dependencies import EngineDep, tag_model
from .models import describe
from .responses import ADMIN, refusals
from .schemas import ModelInfo, ModelNameInPath

router = APIRouter(prefix="/models", tags=["models"])
ChallengerId = Annotated[str, Path(min_length=1, max_length=ID_LENGTH, pattern=ID_PATTERN)]

RESPONSES = refusals(
    *ADMIN,
    400,
    404,
    409,
    410,
    422,
    503,
    _404="unknown model or challenger",
    _409="the model or the challenger was changed meanwhile by another request",
    _503="store or model unavailable: retry the same request after Retry-After",
)


@router.put(
    "/{name}/challengers/{challenger}",
    response_model=ModelInfo,
    dependencies=[Depends(require_admin)],
    responses={
        **RESPONSES,
        **refusals(
            413,
            422,
            _422="a configuration that does not share the model's feature space (n_features, "
            "feature_names, max_features, normalize, label_format), or over max_challengers",
        ),
    },
)
async def put_challenger(
    name: ModelNameInPath, challenger: ChallengerId, config: ModelConfig, request: Request, engine: EngineDep
) -> ModelInfo:
    """Add a challenger: a model configuration that learns, from the next label on, every label of
    the model in the same order, right after it, and scores every prediction in shadow (its answer
    is never returned). It is written to the model's label log, so every replica holds it from the
    same label. The same configuration again changes nothing; another one starts the challenger
    afresh. Its measures (prequential: its prediction before learning each label), drift detector
    and shadow agreement sit in ``state.challengers``, and in ``/metrics``."""
    tag_model(request, name)
    await engine.challenges.put(name, challenger, config)
    return describe(engine, name)


@router.delete(
    "/{name}/challengers/{challenger}",
    status_code=204,
    dependencies=[Depends(require_admin)],
    responses=RESPONSES,
)
async def delete_challenger(
    name: ModelNameInPath, challenger: ChallengerId, request: Request, engine: EngineDep
) -> Response:
    tag_model(request, name)
    await engine.challenges.delete(name, challenger)
    return Response(status_code=204)


@router.post(
    "/{name}/challengers/{challenger}/promote",
    response_model=ModelInfo,
    dependencies=[Depends(require_admin)],
    responses=RESPONSES,
)
async def promote_challenger(
    name: ModelNameInPath, challenger: ChallengerId, request: Request, engine: EngineDep
) -> ModelInfo:
    """Make the challenger the model: a new generation with its configuration whose state is, bit
    for bit, the challenger's once the promoting entry is applied (learner, measures, drift
    detector), at version 0 of an empty log. As after a replacement, predictions of the old
    generation can no longer be labelled (410), and the other challengers do not follow."""
    tag_model(request, name)
    await engine.challenges.promote(name, challenger)
    return describe(engine, name)
