"""``/healthz`` (the process is alive), ``/readyz`` (store reachable, models loaded), ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST

from model_store import StoreUnavailable

from .auth import is_open
from .dependencies import EngineDep, SettingsDep
from .schemas import Health

router = APIRouter(tags=["operations"])


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    return Health(status="alive")


@router.get("/readyz", response_model=Health, responses={503: {"model": Health}})
async def readyz(engine: EngineDep, settings: SettingsDep) -> Health | JSONResponse:
    auth = "open" if is_open(settings) else "keys"
    try:
        await engine.ping()
    except StoreUnavailable as exc:
        body = Health(status="unavailable", detail=f"store unreachable: {exc}", auth=auth)
        return JSONResponse(body.model_dump(), status_code=503)
    if not engine.ready:
        return JSONResponse(
            Health(status="starting", detail="models are loading", auth=auth).model_dump(), status_code=503
        )
    return Health(status="ready", auth=auth, models=len(engine.views()))


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(request: Request) -> Response:
    """Prometheus exposition of every ``acog_*`` series."""
    return Response(request.app.state.telemetry.exposition(), media_type=CONTENT_TYPE_LATEST)
