"""The hot routes, ``POST /predict`` and ``POST /feedback``, served as plain ASGI ahead of FastAPI.

A single prediction costs a few microseconds of our own work; behind FastAPI's route machinery
(per-request dependency resolution, the body parsed into Python objects and validated again,
the reply model checked and serialised) and the middleware stack it cost several times that.
:class:`HotRoutes` serves these two routes itself, in one pass each:

- the API key is checked against digests computed once at start (:class:`~service.api.auth.Keys`);
- the body is read (refused with 413 past ``max_body_bytes``, by ``Content-Length`` or while
  it streams in) and decoded once, straight into the request model, by pydantic-core's JSON
  parser (:meth:`pydantic.TypeAdapter.validate_json`);
- the engine answers; the reply model is serialised once (:meth:`pydantic.BaseModel.model_dump_json`);
- the request is counted and timed like every other (:meth:`service.telemetry.Telemetry.request_done`);
- an unexpected exception is a plain-text 500 (what Starlette's error middleware answers) and is
  raised on, for the server to log.

Once the service serves, :class:`ServiceApp` hands these requests to :class:`HotRoutes` before
FastAPI's middleware stack (its error middleware, body limit and telemetry check, and our start
guard, each a layer of calls on every request), and the ``/ws`` socket to its plain-ASGI handler
(:func:`service.api.ws.serve_socket`), which then reads and answers every message with the server's
own ``receive`` and ``send`` (through the stack, two layers of exception handling wrap every
``send``, and Starlette's socket checks its state on every call). Until then, and when
FastAPI's OpenTelemetry is on (its middleware then sees every request), :class:`HotPath` serves
them from inside the stack, under the start guard.

Every other request, other methods on these paths included, goes on to FastAPI, which still
declares both routes (the OpenAPI document is generated from them; their endpoints answer the
same way, through :func:`answer`). Refusals keep FastAPI's shapes exactly: a body that fails
the fast decoder is decoded again the way FastAPI does (``json.loads``, then the model), so a
422 names the same ``loc``, ``type`` and ``msg`` as before, and a body that cannot be read
at all is the same 400.
"""

from __future__ import annotations

import email.message
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from model_store import StoreError

from ..engine import Engine, EngineError, store_failure
from ..telemetry import Telemetry
from .auth import Keys
from .errors import bounded_errors, engine_error_response
from .limits import too_large_body
from .startup import StartupProgress

JSON_HEADERS = [(b"content-type", b"application/json")]


def engine_of(scope: Scope) -> Engine:
    """The engine serving this request or socket (``app.state.engine``, set at start)."""
    engine: Engine = scope["app"].state.engine
    return engine


def encode(reply: BaseModel) -> bytes:
    """A reply's JSON, serialised once by pydantic-core (the reply is built from validated values,
    so it is not validated again)."""
    return reply.model_dump_json().encode()


class Refused(Exception):
    """A request refused before the engine saw it: the status and the JSON body to answer."""

    def __init__(
        self, status: int, body: dict[str, Any] | bytes, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers


@dataclass(frozen=True, slots=True)
class HotRoute:
    """One route served by :class:`HotPath`: its template, how its body decodes, how the engine
    answers it, and which model a body names (the ``model`` label of its request timings)."""

    path: str
    adapter: TypeAdapter[Any]
    answer: Callable[[Engine, Any], Awaitable[BaseModel]]
    model_of: Callable[[Any], str]


def _is_json(content_type: bytes) -> bool:
    if content_type == b"application/json":
        return True
    message = email.message.Message()  # what FastAPI reads: application/json or application/*+json
    message["content-type"] = content_type.decode("latin-1")
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


def _in_body(error: ValidationError) -> list[dict[str, Any]]:
    return [{**e, "loc": ("body", *e["loc"])} for e in error.errors()]


def decode(adapter: TypeAdapter[Any], body: bytes, content_type: bytes | None) -> Any:
    """The request model of ``body``, or :class:`Refused` with FastAPI's own refusal.

    The fast path is one pass of pydantic-core's JSON parser into the model. Its parser agrees
    with Python's ``json`` on every body it accepts (NaN and Infinity included, which the
    models then refuse); whatever it refuses is decoded again FastAPI's way, which is where
    the refusal's shape comes from."""
    if not body:
        missing = {"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}
        raise Refused(422, {"detail": bounded_errors([missing])})
    as_json = content_type is not None and _is_json(content_type)
    if as_json:
        try:
            return adapter.validate_json(body)
        except ValidationError:
            pass
        try:
            value: Any = json.loads(body)
        except json.JSONDecodeError as exc:
            invalid = {
                "type": "json_invalid",
                "loc": ("body", exc.pos),
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": exc.msg},
            }
            raise Refused(422, {"detail": bounded_errors([invalid])}) from None
        except Exception:  # not UTF-8, nested too deeply: FastAPI's 400
            raise Refused(
                400,
                {
                    "detail": [
                        {
                            "loc": ["body"],
                            "msg": "There was an error parsing the body",
                            "type": "body_unreadable",
                        }
                    ]
                },
            ) from None
    else:  # FastAPI validates the raw bytes against the model (and refuses them)
        value = body
    try:
        return adapter.validate_python(value, from_attributes=True)  # as FastAPI validates a body
    except ValidationError as exc:
        raise Refused(422, {"detail": bounded_errors(_in_body(exc))}) from None


class HotRoutes:
    """Serves the :class:`HotRoute` s by path; see the module docstring."""

    def __init__(
        self,
        routes: list[HotRoute],
        keys: Keys,
        telemetry: Telemetry,
        max_bytes: int,
        sockets: dict[str, ASGIApp] | None = None,
    ) -> None:
        self.routes = {route.path: route for route in routes}
        self.sockets = sockets or {}
        self.keys = keys
        self.telemetry = telemetry
        self.max_bytes = max_bytes

    def route(self, scope: Scope) -> HotRoute | None:
        """The hot route a request is for, or None (anything but a POST to one of their paths)."""
        if scope["type"] != "http" or scope["method"] != "POST":
            return None
        return self.routes.get(scope["path"])

    def socket(self, scope: Scope) -> ASGIApp | None:
        """The plain-ASGI handler of a WebSocket on one of the ``sockets`` paths, or None."""
        if scope["type"] != "websocket":
            return None
        return self.sockets.get(scope["path"])

    async def serve(self, route: HotRoute, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one request to ``route``: the reply, or its refusal, is made first and sent in
        one place, so an unexpected exception is answered 500 before any response has started."""
        start = time.perf_counter()
        status, model = 500, ""
        try:
            try:
                status, model, response = await self._answer(route, scope, receive)
            except Exception:
                await PlainTextResponse("Internal Server Error", 500)(scope, receive, send)
                raise
            if isinstance(response, bytes):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [*JSON_HEADERS, (b"content-length", str(len(response)).encode())],
                    }
                )
                await send({"type": "http.response.body", "body": response})
            elif response is not None:
                await response(scope, receive, send)
        finally:
            self.telemetry.request_done(route.path, "POST", status, model, time.perf_counter() - start)

    async def _answer(
        self, route: HotRoute, scope: Scope, receive: Receive
    ) -> tuple[int, str, bytes | Response | None]:
        """The status, the model the body names, and the 200 reply's JSON or the refusal to send
        (None: the client went away before its body came)."""
        authorization = content_type = length = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"content-type":
                content_type = value
            elif name == b"content-length":
                length = value
        model = ""
        try:
            if length is not None and length.isdigit() and int(length) > self.max_bytes:
                raise Refused(413, too_large_body(self.max_bytes))
            if not self.keys.open:
                refusal = self.keys.refusal(
                    None if authorization is None else authorization.decode("latin-1"), False
                )
                if refusal is not None:
                    status, message = refusal
                    kind = "unauthorized" if status == 401 else "forbidden"
                    raise Refused(
                        status,
                        {"detail": [{"loc": ["header", "Authorization"], "msg": message, "type": kind}]},
                        {"WWW-Authenticate": "Bearer"},
                    )
            body = await self._body(receive)
            if body is None:  # the client went away
                return 500, model, None
            request = decode(route.adapter, body, content_type)
            model = route.model_of(request)
            return 200, model, encode(await route.answer(engine_of(scope), request))
        except Refused as refused:
            if isinstance(refused.body, bytes):
                response = Response(refused.body, refused.status, refused.headers, "application/json")
            else:
                response = JSONResponse(refused.body, refused.status, refused.headers)
            return refused.status, model, response
        except EngineError as error:
            response = engine_error_response(error, "path" if error.field == "name" else "body")
            return response.status_code, model, response
        except StoreError as error:
            response = engine_error_response(store_failure(error), "server")
            return response.status_code, model, response

    async def _body(self, receive: Receive) -> bytes | None:
        message: Message = await receive()
        if message["type"] != "http.request":
            return None
        body: bytes = message.get("body", b"")
        if not message.get("more_body", False):
            if len(body) > self.max_bytes:
                raise Refused(413, too_large_body(self.max_bytes))
            return body
        chunks = [body]
        size = len(body)
        while message.get("more_body", False):
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise Refused(413, too_large_body(self.max_bytes))
            chunks.append(chunk)
        return b"".join(chunks)


class HotPath:
    """ASGI middleware: the hot routes served by ``hot``, every other request passed on to ``app``."""

    def __init__(self, app: ASGIApp, hot: HotRoutes) -> None:
        self.app = app
        self.hot = hot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self.hot.route(scope)
        if route is None:
            await self.app(scope, receive, send)
            return
        await self.hot.serve(route, scope, receive, send)


class ServiceApp(FastAPI):
    """FastAPI, with the hot routes answered by ``hot`` ahead of its middleware stack once
    ``progress`` says the service serves (``hot`` None: every request goes through the stack)."""

    hot: HotRoutes | None = None
    progress: StartupProgress | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot, progress = self.hot, self.progress
        if hot is not None and progress is not None and progress.serving:
            if route := hot.route(scope):
                scope["app"] = self  # what Starlette sets: engine_of reads the engine from it
                await hot.serve(route, scope, receive, send)
                return
            if socket := hot.socket(scope):
                scope["app"] = self
                await socket(scope, receive, send)
                return
        await super().__call__(scope, receive, send)
