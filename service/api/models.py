"""Model management: create/replace (a new generation), list, describe, delete, checkpoint."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from ..engine import Engine
from ..model_config import ModelConfig
from ..schema_change import SchemaChangeRequest
from .auth import require_admin, require_key
from .dependencies import EngineDep, tag_model
from .responses import ADMIN, KEY, refusals
from .schemas import CheckpointOut, ModelInfo, ModelList, ModelNameInPath, ModelSummary

router = APIRouter(prefix="/models", tags=["models"])
Name = ModelNameInPath


def describe(engine: Engine, name: str) -> ModelInfo:
    view = engine.view(name, detail=True)
    if view.config is None:
        return ModelInfo(
            name=name,
            generation=view.generation,
            status="failed",
            failure=view.failure,
            config={},
            rho_mode="",
            created_at=view.created_at,
        )
    shown = view.config.model_dump(mode="json")
    shown["algorithm"] = view.config.resolved_algorithm(engine.settings.memory_budget_bytes)
    return ModelInfo(
        name=name,
        generation=view.generation,
        status=view.status,
        failure=view.failure,
        config=shown,
        rho_mode=view.config.rho_description,
        created_at=view.created_at,
        pending_predictions=view.pending_predictions,
        state=view.state,
    )


@router.put(
    "/{name}",
    response_model=ModelInfo,
    status_code=201,
    dependencies=[Depends(require_admin)],
    responses={
        200: {"description": "unchanged (the same configuration: a no-op), or replaced (with replace=true)"},
        **refusals(
            *ADMIN,
            400,
            409,
            413,
            422,
            503,
            _409="the model exists with another configuration and replace is not true, it changed "
            "meanwhile, or it is not at if_generation with this configuration (model_conflict)",
            _413="more models than ACOG_MAX_MODELS, or a configuration over the limits (limit_exceeded)",
            _422="invalid configuration (the field and the problem are named)",
        ),
    },
)
async def put_model(
    name: Name,
    config: ModelConfig,
    request: Request,
    response: Response,
    engine: EngineDep,
    replace: Annotated[
        bool,
        Query(
            description="start a new generation (learning from scratch) when the model exists with "
            "another configuration; without it, that is a 409 and nothing changes"
        ),
    ] = False,
    if_generation: Annotated[
        int | None,
        Query(
            ge=1,
            description="the generation this PUT is meant for: when the model is at another one, the "
            "answer is 200 with the model as it is if it has this configuration already (a retried "
            "replace that landed answers the generation it made), else a 409; safe to retry",
        ),
    ] = None,
) -> ModelInfo:
    """Create a model. Repeating the same PUT changes nothing (200 with the current model, its
    generation and version kept); another configuration for an existing model needs
    ``replace=true`` and starts a new generation whose labels and state start afresh; with
    ``if_generation`` (the generation it replaces) such a replace is safe to retry."""
    tag_model(request, name)
    outcome = await engine.put_model(name, config, replace=replace, if_generation=if_generation)
    if outcome != "created":
        response.status_code = 200
    return describe(engine, name)


@router.get("", response_model=ModelList, dependencies=[Depends(require_key)], responses=refusals(*KEY))
async def list_models(engine: EngineDep) -> ModelList:
    budget = engine.settings.memory_budget_bytes
    return ModelList(
        models=[
            ModelSummary(
                name=view.name,
                generation=view.generation,
                # as in the model's config, not "auto:acog"
                algorithm=None if view.config is None else view.config.resolved_algorithm(budget),
                version=None if view.config is None else view.version,
                status=view.status,
            )
            for view in engine.views()
        ]
    )


@router.get(
    "/{name}",
    response_model=ModelInfo,
    dependencies=[Depends(require_key)],
    responses=refusals(*KEY, 404, 422),
)
async def get_model(name: Name, request: Request, engine: EngineDep) -> ModelInfo:
    """Configuration, version, counts, the current measures and the eta selection."""
    tag_model(request, name)
    return describe(engine, name)


@router.delete(
    "/{name}",
    status_code=204,
    dependencies=[Depends(require_admin)],
    responses=refusals(*ADMIN, 404, 422, 503),
)
async def delete_model(name: Name, request: Request, engine: EngineDep) -> Response:
    tag_model(request, name)
    await engine.delete_model(name)
    return Response(status_code=204)


@router.post(
    "/{name}/checkpoint",
    response_model=CheckpointOut,
    dependencies=[Depends(require_admin)],
    responses=refusals(*ADMIN, 404, 422, 503),
)
async def checkpoint(name: Name, request: Request, engine: EngineDep) -> CheckpointOut:
    """Write a checkpoint now (it also happens every N labels, every T seconds and at shutdown)."""
    tag_model(request, name)
    written, version = await engine.checkpoint(name)
    return CheckpointOut(written=written, version=version)


@router.post(
    "/{name}/schema",
    response_model=ModelInfo,
    dependencies=[Depends(require_admin)],
    responses=refusals(
        *ADMIN,
        400,
        404,
        409,
        410,
        413,
        422,
        503,
        _409="the schema changed meanwhile (another change landed first): declare again",
        _422="the change does not fit the model: an index schema (n_features), a name not in the schema, "
        "nothing changed, more names than max_features (the field is named)",
        _503="store or model unavailable: retry the same request after Retry-After",
    ),
)
async def change_schema(
    name: Name, change: SchemaChangeRequest, request: Request, engine: EngineDep
) -> ModelInfo:
    """Declare a feature migration on a model with named features: the new ``feature_names``, or
    the ``vanished`` and ``augmented`` names. The change is written to the model's label log, so
    every replica and every recovery applies it at the same point. The model keeps its generation,
    version and measures: survivors keep their weights (``opid`` also compresses what the vanished
    features knew into them), new names start at zero. From then on, a request naming a vanished
    feature is a 422 that names it. ``state.schema`` shows the phase, the names on each side and the
    labels since the change. A retry of the same request answers the same change."""
    tag_model(request, name)
    await engine.change_schema(name, change)
    return describe(engine, name)
