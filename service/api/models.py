"""Model management: create/replace (a new generation), list, describe, delete, checkpoint."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response

from ..engine import Engine, UnknownModel
from ..model_config import ModelConfig
from .auth import require_admin, require_key
from .dependencies import EngineDep, tag_model
from .schemas import CheckpointOut, ModelInfo, ModelList, ModelSummary

router = APIRouter(prefix="/models", tags=["models"])
Name = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]


def describe(engine: Engine, name: str) -> ModelInfo:
    runtime = engine.runtimes.get(name)
    if runtime is None:
        if name in engine.failed:
            return ModelInfo(
                name=name,
                generation=0,
                status="failed",
                failure=engine.failed[name],
                config={},
                rho_mode="",
                created_at=0.0,
            )
        raise UnknownModel("name", f"no model named {name!r}")
    config = runtime.config
    shown = config.model_dump(mode="json")
    shown["algorithm"] = config.resolved_algorithm(engine.settings.memory_budget_bytes)
    writer = engine.writers.get(name)
    failure = writer.failure if writer is not None else None
    return ModelInfo(
        name=name,
        generation=runtime.generation,
        status="failed" if failure else "serving",
        failure=failure,
        config=shown,
        rho_mode=config.rho_description,
        created_at=runtime.created_at,
        pending_predictions=engine.pending_counts.get(name),
        state=runtime.describe(),
    )


@router.put(
    "/{name}",
    response_model=ModelInfo,
    status_code=201,
    dependencies=[Depends(require_admin)],
    responses={
        200: {"description": "replaced: a new generation, learning from scratch"},
        422: {"description": "invalid configuration (the field and the problem are named)"},
    },
)
async def put_model(
    name: Name, config: ModelConfig, request: Request, response: Response, engine: EngineDep
) -> ModelInfo:
    """Create a model, or replace it with a new generation (its labels and state start afresh)."""
    tag_model(request, name)
    _, replaced = await engine.put_model(name, config)
    if replaced:
        response.status_code = 200
    return describe(engine, name)


@router.get("", response_model=ModelList, dependencies=[Depends(require_key)])
async def list_models(engine: EngineDep) -> ModelList:
    budget = engine.settings.memory_budget_bytes
    out = [
        ModelSummary(
            name=name,
            generation=rt.generation,
            algorithm=rt.config.resolved_algorithm(budget),  # as in the model's config, not "auto:acog"
            version=rt.version,
            status="serving",
        )
        for name, rt in sorted(engine.runtimes.items())
    ]
    out += [
        ModelSummary(name=name, generation=0, algorithm=None, version=None, status="failed")
        for name in sorted(engine.failed)
    ]
    return ModelList(models=out)


@router.get("/{name}", response_model=ModelInfo, dependencies=[Depends(require_key)])
async def get_model(name: Name, request: Request, engine: EngineDep) -> ModelInfo:
    """Configuration, version, counts, the current measures and the eta selection."""
    tag_model(request, name)
    return describe(engine, name)


@router.delete("/{name}", status_code=204, dependencies=[Depends(require_admin)])
async def delete_model(name: Name, request: Request, engine: EngineDep) -> Response:
    tag_model(request, name)
    await engine.delete_model(name)
    return Response(status_code=204)


@router.post("/{name}/checkpoint", response_model=CheckpointOut, dependencies=[Depends(require_admin)])
async def checkpoint(name: Name, request: Request, engine: EngineDep) -> CheckpointOut:
    """Write a checkpoint now (it also happens every N labels, every T seconds and at shutdown)."""
    tag_model(request, name)
    written = await engine.checkpoint(name)
    return CheckpointOut(written=written, version=engine.runtime(name).version)
