"""The hot routes, ``POST /predict`` and ``POST /feedback``, served as plain ASGI ahead of FastAPI.

A single prediction costs a few microseconds of our own work; behind FastAPI's route machinery
(per-request dependency resolution, the body parsed into Python objects and validated again,
the reply model checked and serialised) and the middleware stack it cost several times that.
:class:`HotPath` sits outermost (inside Starlette's error middleware) and serves these two
routes itself, in one pass each:

- the API key is checked against digests computed once at start (:class:`~service.api.auth.Keys`);
- the body is read (refused with 413 past ``max_body_bytes``, by ``Content-Length`` or while
  it streams in) and decoded once, straight into the request model, by pydantic-core's JSON
  parser (:meth:`pydantic.TypeAdapter.validate_json`);
- the engine answers; the reply model is serialised once (:meth:`pydantic.BaseModel.model_dump_json`);
- the request is counted and timed like every other (:meth:`service.telemetry.Telemetry.request_done`).

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

from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from model_store import StoreError

from ..engine import Engine, EngineError, store_failure
from ..telemetry import Telemetry
from .auth import Keys
from .errors import bounded_errors, engine_error_response
from .limits import too_large_body

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


class HotPath:
    """ASGI middleware serving the :class:`HotRoute` s by path; see the module docstring."""

    def __init__(
        self, app: ASGIApp, routes: list[HotRoute], keys: Keys, telemetry: Telemetry, max_bytes: int
    ) -> None:
        self.app = app
        self.routes = {route.path: route for route in routes}
        self.keys = keys
        self.telemetry = telemetry
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self.routes.get(scope["path"]) if scope["type"] == "http" else None
        if route is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status, model = 500, ""
        try:
            status, model = await self._serve(route, scope, receive, send)
        finally:
            self.telemetry.request_done(route.path, "POST", status, model, time.perf_counter() - start)

    async def _serve(self, route: HotRoute, scope: Scope, receive: Receive, send: Send) -> tuple[int, str]:
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
                return 500, model
            request = decode(route.adapter, body, content_type)
            model = route.model_of(request)
            reply = encode(await route.answer(engine_of(scope), request))
        except Refused as refused:
            if isinstance(refused.body, bytes):
                await Response(refused.body, refused.status, refused.headers, "application/json")(
                    scope, receive, send
                )
            else:
                await JSONResponse(refused.body, refused.status, refused.headers)(scope, receive, send)
            return refused.status, model
        except EngineError as error:
            response = engine_error_response(error, "path" if error.field == "name" else "body")
            await response(scope, receive, send)
            return response.status_code, model
        except StoreError as error:
            response = engine_error_response(store_failure(error), "server")
            await response(scope, receive, send)
            return response.status_code, model
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*JSON_HEADERS, (b"content-length", str(len(reply)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": reply})
        return 200, model

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
