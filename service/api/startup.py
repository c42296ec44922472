"""Starting in the background: the port listens at once, ``/healthz`` answers, ``/readyz`` says
what is left ("compiling kernels 3 of 17 (arow)"), the log shows the progress, and every other
request is a 503 with ``Retry-After`` until the models serve.

:func:`start_in_background` runs the slow part of a start (the kernels' warm-up, then the engine:
the store's checks, recovery of every model from its checkpoint and log) as a task, reporting into
a :class:`StartupProgress`; :class:`StartingGuard` answers for the service meanwhile. A start that
fails (a store that lost its data, say) is logged as one line and ends the process (SIGTERM: the
clean shutdown path), as a refused start did before the port listened.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send

from ..engine import Engine
from ..learners import warm_up
from ..learners.warm_up import reporting
from ..settings import Settings

log = logging.getLogger("acog.api")

ALWAYS_OPEN = ("/healthz", "/readyz", "/metrics", "/docs", "/redoc", "/openapi.json")
"""Paths served while the service starts (prefixes: the docs' assets too)."""
RETRY_AFTER_SECONDS = 1
LOG_EVERY_SECONDS = 1.0
"""A progress line at most this often (a warm kernel cache loads every algorithm in well under it)."""


@dataclass
class StartupProgress:
    """Where the start is; written by the start task (and its warm-up thread), read by requests."""

    began: float = field(default_factory=time.monotonic)
    phase: str = "starting"
    step: int = 0
    steps: int = 0
    algorithm: str | None = None
    serving: bool = False
    _logged: float = 0.0

    def report(self, k: int, n: int, algorithm: str | None) -> None:
        """The warm-up's reporter (:func:`service.learners.warm_up.reporting`)."""
        self.phase, self.step, self.steps, self.algorithm = "compiling", k, n, algorithm
        now = time.monotonic()
        if algorithm is not None and (k == 1 or now - self._logged >= LOG_EVERY_SECONDS):
            self._logged = now
            log.info("start-up: %s", self.detail)

    def recovering(self) -> None:
        self.phase = "recovering"
        log.info("start-up: %s", self.detail)

    @property
    def detail(self) -> str:
        """What is left, in words, with the time since the process began to start."""
        elapsed = f"{time.monotonic() - self.began:.0f} s since start"
        if self.phase == "compiling" and self.algorithm is not None:
            return f"compiling kernels {self.step} of {self.steps} ({self.algorithm}), {elapsed}"
        if self.phase == "compiling":
            return f"kernels ready ({self.steps} algorithms), {elapsed}"
        if self.phase == "recovering":
            return f"checking the store and recovering the models, {elapsed}"
        return f"starting, {elapsed}"


async def start_in_background(
    engine: Engine, settings: Settings, progress: StartupProgress, *, exit_on_failure: bool = True
) -> None:
    """Warm the kernels (every algorithm's with ``ACOG_WARM_UP=all``), then start the engine (it
    warms what its models need), reporting progress; then serve. A failure ends the process (or,
    without ``exit_on_failure``, is raised)."""
    try:
        with reporting(progress.report):
            if settings.warm_up == "all":
                done = await asyncio.to_thread(warm_up)
                log.info("kernels of every algorithm ready: %s", done.summary())
            progress.recovering()
            await engine.start()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if not exit_on_failure:
            raise
        log.error("start-up failed: %s", " ".join(str(exc).split()) or type(exc).__name__)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    progress.serving = True
    seconds = time.monotonic() - progress.began
    log.info("ready: %d model(s) serving, %.1f s after start", len(engine.views()), seconds)


class StartingGuard:
    """Until the models serve: ``/healthz``, ``/readyz``, ``/metrics`` and the docs pass; any other
    request is a 503 naming what is left, with ``Retry-After`` (a WebSocket is closed with 1013, "try
    again later"). Afterwards, one attribute read per request."""

    def __init__(self, app: ASGIApp, progress: StartupProgress) -> None:
        self.app = app
        self.progress = progress

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.progress.serving or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["path"].startswith(ALWAYS_OPEN):
            await self.app(scope, receive, send)
            return
        message = f"the service is starting: {self.progress.detail}; retry in a moment"
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1013, "reason": message[:120]})
            return
        body = json.dumps({"detail": [{"loc": ["service"], "msg": message, "type": "starting"}]}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})
