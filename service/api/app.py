"""The FastAPI application: routers, error shapes, limits, metrics, and the store's life cycle.

``create_app(settings)`` builds an app; on start it opens the store (the embedded Redis
when no ``redis_url`` is set) and listens at once, while the kernels compile and every model
is recovered (checkpoint + log replay) in the background (:mod:`.startup`); it reports ready
only then; on shutdown (SIGTERM) it checkpoints every model and closes the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from model_store import ConnectionSettings, Durability, open_store

from .. import __version__
from ..engine import Engine
from ..settings import Settings
from ..telemetry import Telemetry
from . import challengers, docs, drift, errors, feedback, health, models, predict, rollback, ws
from .auth import Keys
from .hot import HotPath, HotRoutes, ServiceApp
from .limits import BodySizeLimit
from .startup import StartingGuard, StartupProgress, start_in_background

log = logging.getLogger("acog.api")
MIN_KEY_LENGTH = 16
"""Keys shorter than this are accepted, with a warning at start."""
OPENTELEMETRY_OFF: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}
"""FastAPI's native OpenTelemetry, switched off unless ``ACOG_OPENTELEMETRY`` is set."""

DESCRIPTION = """Streaming anomaly detection with cost-sensitive, second-order online learning.

`POST /predict` answers `sign(mu . x)` at once (+1 = anomaly). `POST /feedback` delivers the
label later; it is appended to the model's label log (a Redis Stream) and learned before the
reply, in stream order. Every 4xx names the field and the problem; a refused request never
changes a model."""


GC_THRESHOLDS = (10_000, 50, 100)
"""Young collections after 10,000 net container allocations (CPython: 700), then every 50 and 100."""


def tune_garbage_collector() -> tuple[int, int, int]:
    """Collect the young generations less often; return the previous thresholds.

    A single /predict makes a few hundred short-lived containers, so with CPython's default
    thresholds (700, 10, 10) a young collection runs every couple of requests and an older
    one every few dozen, each walking the objects that survived earlier ones. py-spy
    (``--native``) charged 12.5 % of the service's CPU under single-/predict load to
    ``gc_collect_main``; with :data:`GC_THRESHOLDS` single /predict throughput rose by
    about 13 % (from about 3,950 to about 4,450 req/s on the benchmark machine). Reference
    counting still frees acyclic garbage at once; only cycles wait longer. ``gc.freeze()``
    after start-up gained another 4 % but is not used: a frozen model that is later deleted
    or replaced would never have its reference cycles collected.
    """
    previous = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    return previous


def restore_garbage_collector(previous: tuple[int, int, int]) -> None:
    gc.set_threshold(*previous)


class RequestTimer:
    """Count every HTTP request by route template, method and status code
    (``acog_http_requests_total``), and time it (``acog_request_duration_seconds{model, route}``,
    the model label bounded by :meth:`Telemetry.model_label`)."""

    def __init__(self, app: ASGIApp, telemetry: Telemetry) -> None:
        self.app = app
        self.telemetry = telemetry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # an exception that escapes the app is answered 500 by Starlette's outer layer

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None)
            model = (scope.get("state") or {}).get("model", "")
            self.telemetry.request_done(route, scope["method"], status, model, time.perf_counter() - start)


def create_app(settings: Settings | None = None, *, listen_while_starting: bool = True) -> ServiceApp:
    """The app. ``listen_while_starting``: answer (``/healthz``, ``/readyz``, 503s) while the kernels
    compile and the models recover; a worker of ``acog serve --workers N`` starts with it off, so
    that it takes connections from the shared socket only once it is ready (the socket itself
    listens from the start, and a ready worker answers them)."""
    settings = settings or Settings()
    telemetry = Telemetry(CollectorRegistry(auto_describe=True))
    keys = Keys.of(settings)
    progress = StartupProgress()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if keys.open:
            log.warning("no ACOG_API_KEYS or ACOG_ADMIN_KEYS set: the API is open to anyone who can reach it")
        short = sum(len(key) < MIN_KEY_LENGTH for key in [*settings.api_keys, *settings.admin_keys])
        if short:
            log.warning(
                "%d API or admin key(s) shorter than %d characters: use long random keys "
                "(e.g. `openssl rand -hex 32`)",
                short,
                MIN_KEY_LENGTH,
            )
        connection = ConnectionSettings(
            socket_timeout=settings.redis_timeout_seconds,
            connect_timeout=settings.redis_connect_timeout_seconds,
            retries=settings.redis_retries,
            cluster=settings.redis_cluster,
            durability=Durability(
                replicas=settings.redis_wait_replicas,
                aof_local=settings.redis_wait_aof,
                timeout_seconds=settings.redis_wait_timeout_seconds,
            ),
        )
        store, embedded = open_store(settings.redis_url, settings.data_dir, connection)
        if embedded is not None:
            log.info("embedded Redis at %s (data in %s)", embedded.url, settings.data_dir)
        engine = Engine(store, settings, telemetry)
        telemetry.watch(engine)
        app.state.engine = engine
        # The port listens now; the kernels and the models come up in the background (/readyz says
        # what is left, other requests get a 503 until then: StartingGuard).
        starting: asyncio.Task[None] | None = None
        try:
            if listen_while_starting:
                starting = asyncio.create_task(start_in_background(engine, settings, progress), name="start")
            else:
                await start_in_background(engine, settings, progress, exit_on_failure=False)
            previous = tune_garbage_collector()
            try:
                yield
            finally:
                restore_garbage_collector(previous)
        finally:
            if starting is not None:
                starting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await starting
            await engine.stop()
            await store.close()
            if embedded is not None:
                embedded.close()

    app = ServiceApp(
        title="acog-service",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        telemetry=None if settings.opentelemetry else OPENTELEMETRY_OFF,
        docs_url=None,  # served by docs.install, with local assets instead of a CDN's
        redoc_url=None,
    )
    docs.install(app)
    app.state.settings = settings
    app.state.telemetry = telemetry
    app.state.keys = keys
    app.state.startup = progress
    for router in (predict.router, feedback.router, models.router, ws.router, health.router):
        app.include_router(router)
    for router in (rollback.router, drift.router, challengers.router):  # history, drift, challengers
        app.include_router(router)
    errors.install(app)
    app.add_middleware(RequestTimer, telemetry=telemetry)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    # /predict, /feedback and the /ws socket skip the stack above (see service.api.hot). Until the
    # models serve, StartingGuard (outermost) answers them with its 503 (a socket: 1013) as it answers
    # every route; once they serve, they skip the whole stack, unless FastAPI's OpenTelemetry is to
    # see every request
    hot = HotRoutes(
        [predict.ROUTE, feedback.ROUTE],
        keys,
        telemetry,
        settings.max_body_bytes,
        sockets={"/ws": ws.serve_socket},
    )
    app.add_middleware(HotPath, hot=hot)
    app.add_middleware(StartingGuard, progress=progress)
    if not settings.opentelemetry:
        app.hot, app.progress = hot, progress
    return app
