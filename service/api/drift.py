"""A model's drift policy: what it does when its drift detector signals (see :mod:`service.drift`)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from .auth import require_admin
from .dependencies import EngineDep, tag_model
from .models import describe
from .responses import ADMIN, refusals
from .schemas import ModelInfo, ModelNameInPath

router = APIRouter(prefix="/models", tags=["models"])


class DriftPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    on_drift: Literal["none", "reset", "challenger"] = Field(
        description="none: count the drift (acog_drift_total) and go on; reset: the learner starts afresh "
        "right after the label that signalled (measures, feature registry and detector carry on); "
        'challenger: a fresh challenger of the model\'s configuration, "drift", starts learning from the '
        "next label (within max_challengers), to be promoted if it does better"
    )


@router.put(
    "/{name}/drift_policy",
    response_model=ModelInfo,
    dependencies=[Depends(require_admin)],
    responses=refusals(
        *ADMIN,
        400,
        404,
        410,
        422,
        503,
        _422="an unknown policy (the field is named)",
        _503="store or model unavailable: retry the same request after Retry-After",
    ),
)
async def set_drift_policy(
    name: ModelNameInPath, policy: DriftPolicy, request: Request, engine: EngineDep
) -> ModelInfo:
    """Set what the model does when its drift detector signals. The policy is written to the model's
    label log, so every replica and every recovery applies it, and resets, at the same labels;
    ``state.drift`` shows it (``on_drift``) and the resets it made. The answer comes once this
    replica applied it."""
    tag_model(request, name)
    await engine.drift_policies.set(name, policy.on_drift)
    return describe(engine, name)
