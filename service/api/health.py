"""``/healthz`` (the process is alive), ``/readyz`` (store reachable, models loaded), ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST

from ..operations_metrics import check_readiness
from .auth import is_open
from .dependencies import EngineDep, SettingsDep
from .schemas import Health

router = APIRouter(tags=["operations"])


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    return Health(status="alive")


@router.get("/readyz", response_model=Health, responses={503: {"model": Health}})
async def readyz(request: Request, engine: EngineDep, settings: SettingsDep) -> Health | JSONResponse:
    """Ready: the models are loaded, their kernels compiled, and the store accepts writes (not only
    answers: a Redis out of memory or unable to write its append-only file answers reads)."""
    auth = "open" if is_open(settings) else "keys"
    readiness = await check_readiness(engine)
    if not readiness.ready:
        detail = readiness.detail
        if readiness.status == "starting":  # what is left: "compiling kernels 3 of 17 (arow), ..."
            detail = request.app.state.startup.detail
        body = Health(status=readiness.status, detail=detail, auth=auth)
        return JSONResponse(body.model_dump(), status_code=503)
    epoch = None if engine.identity is None else engine.identity.epoch
    return Health(status="ready", auth=auth, models=len(engine.views()), store_epoch=epoch)


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(request: Request) -> Response:
    """Prometheus exposition of every ``acog_*`` series (and ``process_*``, ``python_*`` in
    single-process mode). Each scrape first probes the store, for ``acog_store_up``,
    ``acog_store_probe_seconds`` and ``acog_ready``."""
    telemetry = request.app.state.telemetry
    await telemetry.probe()
    return Response(telemetry.exposition(), media_type=CONTENT_TYPE_LATEST)
