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
    """Ready: the models are loaded, their kernels compiled, and the store accepts writes (not only
    answers: a Redis out of memory or unable to write its append-only file answers reads)."""
    auth = "open" if is_open(settings) else "keys"

    def unavailable(status: str, detail: str) -> JSONResponse:
        return JSONResponse(Health(status=status, detail=detail, auth=auth).model_dump(), status_code=503)

    if engine.store_lost is not None:
        return unavailable("store_lost", engine.store_lost)
    try:
        await engine.store.check_writable()
    except StoreUnavailable as exc:
        return unavailable("unavailable", f"store refuses writes: {exc}")
    if not engine.ready:
        return unavailable("starting", "models are loading")
    epoch = None if engine.identity is None else engine.identity.epoch
    return Health(status="ready", auth=auth, models=len(engine.views()), store_epoch=epoch)


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(request: Request) -> Response:
    """Prometheus exposition of every ``acog_*`` series."""
    return Response(request.app.state.telemetry.exposition(), media_type=CONTENT_TYPE_LATEST)
