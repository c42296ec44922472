"""A model's retained checkpoints, and a rollback to one of them (a new generation); see
:mod:`service.engine.rollback` for what becomes of the labels after the checkpoint."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from .auth import require_admin, require_key
from .dependencies import EngineDep, tag_model
from .models import describe
from .responses import ADMIN, KEY, refusals
from .schemas import ModelInfo, ModelNameInPath

router = APIRouter(prefix="/models", tags=["models"])


class RetainedCheckpointOut(BaseModel):
    generation: int
    version: int = Field(description="the log position whose state the checkpoint holds")
    applied_id: str = Field(description="the stream id of the last log entry applied in it")
    written_at: float | None = Field(description="unix time of the state")


class CheckpointList(BaseModel):
    checkpoints: list[RetainedCheckpointOut] = Field(description="newest first")


class RollbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(
        ge=0,
        description="the version of one of the model's retained checkpoints (GET /models/{name}/checkpoints)",
    )


@router.get(
    "/{name}/checkpoints",
    response_model=CheckpointList,
    dependencies=[Depends(require_key)],
    responses=refusals(*KEY, 404, 422, 503),
)
async def list_checkpoints(name: ModelNameInPath, request: Request, engine: EngineDep) -> CheckpointList:
    """The current generation's retained checkpoints (``ACOG_CHECKPOINTS_KEPT``), newest first: the
    versions a rollback can restore."""
    tag_model(request, name)
    kept = await engine.rollbacks.checkpoints(name)
    return CheckpointList(
        checkpoints=[
            RetainedCheckpointOut(
                generation=c.generation, version=c.version, applied_id=c.applied_id, written_at=c.written_at
            )
            for c in kept
        ],
    )


@router.post(
    "/{name}/rollback",
    response_model=ModelInfo,
    dependencies=[Depends(require_admin)],
    responses=refusals(
        *ADMIN,
        400,
        404,
        409,
        422,
        503,
        _409="the model was changed meanwhile by another request",
        _422="no retained checkpoint at that version (the retained ones are named)",
        _503="store or model unavailable: retry the same request after Retry-After",
    ),
)
async def rollback(
    name: ModelNameInPath, body: RollbackRequest, request: Request, engine: EngineDep
) -> ModelInfo:
    """Start a new generation whose state is, bit for bit, the retained checkpoint at ``version``
    (learner, measures, feature registry, drift detector), at version 0 of its own empty log. The
    labels applied after that checkpoint are forgotten, not replayed: a rollback is the decision
    that what the model learned since was wrong. Predictions made before the rollback can no longer
    be labelled (410), as after a replacement. Every replica serves the new generation within a
    second."""
    tag_model(request, name)
    await engine.rollbacks.rollback(name, body.version)
    return describe(engine, name)
