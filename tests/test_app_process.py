"""Process-wide choices the app makes while it serves: FastAPI's OpenTelemetry hook, the GC, and the
hot routes and the socket ahead of the middleware stack.

All three were found with py-spy under single-/predict load (``python -m bench.service_load``): the
per-request OpenTelemetry provider lookup, CPython's default garbage-collector thresholds, and the
middleware layers in front of the two hot routes.
These tests run the app's real lifespan against the test Redis.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from pydantic import BaseModel
from starlette.types import Message, Receive, Scope, Send

from service.api.app import GC_THRESHOLDS, create_app
from service.api.hot import ServiceApp
from service.api.ws import TURN_EVERY
from service.model_config import ModelConfig
from service.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def settings(redis_url: str, tmp_path: Path, **overrides: object) -> Settings:
    return Settings(redis_url=redis_url, data_dir=tmp_path, **overrides)  # type: ignore[arg-type]


def test_fastapi_opentelemetry_is_off_unless_asked_for(redis_url: str, tmp_path: Path) -> None:
    off = create_app(settings(redis_url, tmp_path))
    on = create_app(settings(redis_url, tmp_path, opentelemetry=True))
    assert not off._native_telemetry.enabled()  # no per-request provider lookups
    assert (off._telemetry["tracing"], off._telemetry["metrics"], off._telemetry["logs"]) == (False,) * 3
    assert (on._telemetry["tracing"], on._telemetry["metrics"], on._telemetry["logs"]) == (True,) * 3


async def test_gc_thresholds_are_raised_while_serving_and_restored_after(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    before = gc.get_threshold()
    assert before != GC_THRESHOLDS
    app = create_app(settings(redis_url, tmp_path))
    async with app.router.lifespan_context(app):
        assert gc.get_threshold() == GC_THRESHOLDS
    assert gc.get_threshold() == before


async def _serving(app: ServiceApp) -> None:
    for _ in range(1200):  # the kernels compile and the models recover in the background
        if app.progress is not None and app.progress.serving:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the app did not start serving")


def _count_stack(app: ServiceApp) -> list[str]:
    """The paths of the requests and sockets that reach the app's middleware stack from now on."""
    stack = app.build_middleware_stack()
    paths: list[str] = []

    async def counted(scope: Scope, receive: Receive, send: Send) -> None:
        paths.append(scope["path"])
        await stack(scope, receive, send)

    app.middleware_stack = counted
    return paths


async def test_hot_routes_skip_the_middleware_stack_once_the_service_serves(
    redis_url: str, tmp_path: Path
) -> None:
    app = create_app(settings(redis_url, tmp_path))
    async with app.router.lifespan_context(app):
        await _serving(app)
        paths = _count_stack(app)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://test") as client:
            missing = await client.post("/predict", json={"model": "absent", "features": [1.0]})
            health = await client.get("/healthz")
    assert missing.status_code == 404 and missing.json()["detail"][0]["loc"] == ["body", "model"]
    assert health.status_code == 200
    assert paths == ["/healthz"]  # /predict never reached the stack


class _Client:
    """The far end of a socket on ``/ws``, driving the app over plain ASGI: the messages it is given
    come in, in order; what the app sends is kept in ``sent``."""

    def __init__(self, *messages: Message) -> None:
        self.incoming: asyncio.Queue[Message] = asyncio.Queue()
        self.sent: list[Message] = []
        for message in messages:
            self.incoming.put_nowait(message)

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    async def run(self, app: ServiceApp) -> None:
        scope = {"type": "websocket", "path": "/ws", "headers": [], "query_string": b"", "subprotocols": []}
        await app(scope, self.incoming.get, self.send)


async def test_the_socket_skips_the_middleware_stack_once_the_service_serves(
    redis_url: str, tmp_path: Path
) -> None:
    app = create_app(settings(redis_url, tmp_path))
    predict = {"type": "predict", "id": 7, "model": "absent", "features": [1.0]}
    client = _Client(
        {"type": "websocket.connect"},
        {"type": "websocket.receive", "text": json.dumps(predict)},
        {"type": "websocket.receive", "text": "not json"},
        {"type": "websocket.disconnect", "code": 1000},
    )
    sent = client.sent
    async with app.router.lifespan_context(app):
        await _serving(app)
        reached = _count_stack(app)
        await asyncio.wait_for(client.run(app), 30)
    assert reached == []  # the socket never reached the stack
    assert sent[0] == {"type": "websocket.accept"}
    refused, unreadable = (json.loads(m["text"]) for m in sent[1:])
    assert (refused["id"], refused["ok"], refused["status"]) == (7, False, 404)
    assert refused["detail"][0]["loc"] == ["model"]
    assert (unreadable["ok"], unreadable["status"], unreadable["detail"][0]["type"]) == (
        False,
        422,
        "json_invalid",
    )
    assert len(sent) == 3


async def test_a_burst_on_the_socket_is_stored_in_turns_and_answered_in_order(
    redis_url: str, tmp_path: Path
) -> None:
    """64 messages read at once: the store gets them in calls of ``TURN_EVERY``, not one call after
    all are scored, and the replies keep the messages' order."""
    app = create_app(settings(redis_url, tmp_path))
    client = _Client({"type": "websocket.connect"})
    sent = client.sent
    async with app.router.lifespan_context(app):
        await _serving(app)
        engine = app.state.engine
        await engine.put_model("burst", ModelConfig(n_features=2))
        stored: list[int] = []
        put_pending = engine.store.put_pending

        async def counted(model: str, generation: int, items: Any, *args: Any) -> Any:
            stored.append(len(items))
            return await put_pending(model, generation, items, *args)

        engine.store.put_pending = counted
        for i in range(64):
            message = {"type": "predict", "id": i, "model": "burst", "features": [1.0, i / 64]}
            client.incoming.put_nowait({"type": "websocket.receive", "text": json.dumps(message)})
        serving = asyncio.create_task(client.run(app))
        for _ in range(300):
            if len(sent) == 65:
                break
            await asyncio.sleep(0.01)
        client.incoming.put_nowait({"type": "websocket.disconnect", "code": 1000})
        await asyncio.wait_for(serving, 30)
    replies = [json.loads(m["text"]) for m in sent[1:]]
    assert [(r["id"], r["ok"]) for r in replies] == [(i, True) for i in range(64)]
    assert stored == [TURN_EVERY] * (64 // TURN_EVERY)


async def test_an_unexpected_error_on_a_hot_route_is_a_plain_500_and_is_raised_on(
    redis_url: str, tmp_path: Path
) -> None:
    app = create_app(settings(redis_url, tmp_path))
    assert app.hot is not None

    async def broken(engine: object, request: object) -> BaseModel:
        raise RuntimeError("a bug")

    app.hot.routes["/predict"] = dataclasses.replace(app.hot.routes["/predict"], answer=broken)
    body = {"model": "any", "features": [1.0]}
    async with app.router.lifespan_context(app):
        await _serving(app)
        quiet = httpx.ASGITransport(app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=quiet, base_url="http://test") as client:
            response = await client.post("/predict", json=body)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://test") as client:
            with pytest.raises(RuntimeError, match="a bug"):  # for the server to log
                await client.post("/predict", json=body)
    assert (response.status_code, response.text) == (500, "Internal Server Error")


def test_with_opentelemetry_on_every_request_goes_through_the_stack(redis_url: str, tmp_path: Path) -> None:
    assert create_app(settings(redis_url, tmp_path, opentelemetry=True)).hot is None
