"""Request metrics: what the service's metrics middleware costs per HTTP request, in process.

    .venv/bin/python -m bench.request_metrics [--requests 20000] [--repeats 5]

One FastAPI app whose ``POST /predict`` tags its model and answers a constant body (no engine,
no store: only what every request goes through) is called directly as an ASGI app, so that no
socket or client cost hides the middleware's. Three stacks, run in turn ``--repeats`` times:

- **none**: no metrics middleware (the baseline);
- **before**: the middleware as it was (commit 7281df3): one histogram observation per request,
  labelled with the model name the client sent;
- **now**: :class:`service.api.app.RequestTimer`: the status code captured from the response,
  ``acog_http_requests_total{route, method, code}`` counted, the model name bounded to the models
  the engine holds, the histogram observed.

Printed: microseconds per request (median and range over the repeats) and the ratios of the
medians, ``now / before`` and ``now / none``. No figure is written into the docs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.app import RequestTimer
from service.api.dependencies import tag_model
from service.telemetry import Telemetry

BODY = b'{"model": "default", "features": [0.5, 1.0, -2.0]}'


class BeforeTimer:
    """The middleware of commit 7281df3, verbatim but for the name."""

    def __init__(self, app: ASGIApp, telemetry: Telemetry) -> None:
        self.app = app
        self.telemetry = telemetry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None)
            if path is not None and path != "/metrics":
                model = (scope.get("state") or {}).get("model", "")
                self.telemetry.request_duration.labels(model, path).observe(time.perf_counter() - start)


class Holds:
    """The two attributes of an engine that :meth:`Telemetry.model_label` reads: one model."""

    def __init__(self) -> None:
        self.replicas: dict[str, object] = {"default": object()}
        self.failed: dict[str, object] = {}


def build(middleware: type | None) -> FastAPI:
    app = FastAPI(telemetry={"tracing": False, "metrics": False, "logs": False})

    @app.post("/predict")
    async def predict(request: Request) -> Response:
        tag_model(request, "default")
        await request.body()
        return Response(b'{"label": 1}', media_type="application/json")

    if middleware is not None:
        telemetry = Telemetry(CollectorRegistry())
        telemetry.engine = Holds()  # type: ignore[assignment]
        app.add_middleware(middleware, telemetry=telemetry)  # type: ignore[arg-type]
    return app


async def drive(app: ASGIApp, n: int) -> float:
    """Seconds per request over ``n`` sequential requests."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/predict",
        "raw_path": b"/predict",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(message: Message) -> None:
        return None

    await app({**scope, "state": {}}, receive, send)  # the middleware stack is built on first call
    start = time.perf_counter()
    for _ in range(n):
        await app({**scope, "state": {}}, receive, send)
    return (time.perf_counter() - start) / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=str(__doc__).splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    stacks: dict[str, Callable[[], FastAPI]] = {
        "none": lambda: build(None),
        "before": lambda: build(BeforeTimer),
        "now": lambda: build(RequestTimer),
    }
    apps = {name: make() for name, make in stacks.items()}
    times: dict[str, list[float]] = {name: [] for name in apps}
    for _ in range(args.repeats):
        for name, app in apps.items():
            times[name].append(asyncio.run(drive(app, args.requests)) * 1e6)
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{args.requests} requests x {args.repeats} repeats, in process (µs per request)")
    for name, values in times.items():
        print(f"  {name:6s} median {median[name]:7.2f}  range {min(values):7.2f} - {max(values):7.2f}")
    print(f"  now / before = {median['now'] / median['before']:.3f}")
    print(f"  now / none   = {median['now'] / median['none']:.3f}")
    added = {name: median[name] - median["none"] for name in ("before", "now")}
    print(f"  added by the middleware: before {added['before']:.2f} µs, now {added['now']:.2f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
