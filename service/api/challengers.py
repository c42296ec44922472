"""A model's challengers: configurations that learn from its labels in shadow, side by side with it
(``state.challengers`` of ``GET /models/{name}``), and one of them promoted to be the model."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Request, Response
from pydantic import Field

from ..challengers import ID_LENGTH, ID_PATTERN, MAX_STATE_BYTES
from ..model_config import ModelConfig
from .auth import require_admin
from .dependencies import EngineDep, tag_model
from .models import describe
from .responses import ADMIN, refusals
from .schemas import ModelInfo, ModelNameInPath

router = APIRouter(prefix="/models", tags=["models"])
ChallengerId = Annotated[str, Path(min_length=1, max_length=ID_LENGTH, pattern=ID_PATTERN)]


class ChallengerConfig(ModelConfig):
    """A challenger's model configuration, and where it starts learning (``start``)."""

    start: Literal["now", "log"] = Field(
        "now",
        description='"now": learn from the next label on. "log": first learn the retained history, '
        "the labels of the model's current generation from its oldest retained log entry (or its "
        "last declared schema change) up to the entry that adds the challenger, in the same order as "
        "the model (how much is retained: ACOG_LOG_RETAIN_ENTRIES / ACOG_LOG_RETAIN_SECONDS, plus "
        "what lies after the oldest retained checkpoint); state.challengers[id].history says how many "
        "labels it learned so (0 when the log held none: it then starts from now, no error). Every "
        f"replica holds the same bits. Its state must encode within {MAX_STATE_BYTES} bytes (else 413). "
        "The same configuration again changes nothing, whatever start says: delete the challenger to "
        "start it again.",
    )


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
            _413='a body over the configured limits, or with start "log" a challenger whose state is too '
            "large to carry in a log entry (limit_exceeded)",
            _422="a configuration that does not share the model's feature space (n_features, "
            "feature_names, max_features, normalize, label_format), or over max_challengers",
        ),
    },
)
async def put_challenger(
    name: ModelNameInPath,
    challenger: ChallengerId,
    config: ChallengerConfig,
    request: Request,
    engine: EngineDep,
) -> ModelInfo:
    """Add a challenger: a model configuration that learns, from the next label on (or, with
    ``"start": "log"``, first from the retained history), every label of the model in the same
    order, right after it, and scores every prediction in shadow (its answer is never returned). It
    is written to the model's label log, so every replica holds it from the same label. The same
    configuration again changes nothing; another one starts the challenger afresh. Its measures
    (prequential: its prediction before learning each label), drift detector and shadow agreement
    sit in ``state.challengers``, and in ``/metrics``."""
    tag_model(request, name)
    model = ModelConfig.model_validate(config.model_dump(exclude={"start"}, exclude_unset=True))
    await engine.challenges.put(name, challenger, model, config.start)
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
