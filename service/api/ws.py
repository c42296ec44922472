"""``WS /ws``: predictions and labels as a stream, with the REST semantics.

Each text message is one JSON object ``{"type": "predict" | "feedback", "id": <any>, ...}``
whose other fields are those of the REST body. Each gets exactly one reply, in the order
the messages came, carrying the same ``id``::

    {"id": ..., "type": "predict", "ok": true, "status": 200, "result": {...REST reply...}}
    {"id": ..., "type": "feedback", "ok": false, "status": 422, "detail": [{"loc", "msg", "type"}]}

Without an allowed key (when keys are configured) the socket is accepted and closed at
once with code 1008 (policy violation) and the reason: a browser can read a close code, not
the status of a refused handshake. A malformed message (not JSON, nested too deeply, wrong
fields) gets an error reply and the socket stays open. Messages are handled
concurrently but answered in order; at most ``ws_queue_size`` may be in flight, after which
the server stops reading (TCP backpressure). Of a burst read at once, :data:`TURN_EVERY` messages
are handled between two turns of the event loop, so that the first replies leave while the rest
is scored. Messages over ``ws_max_message_bytes`` (413)
or above ``ws_max_messages_per_second`` (429) are refused one by one. A frame larger than
``4 * ws_max_message_bytes`` is not read at all under uvicorn, which closes the socket with 1009
(message too big), as RFC 6455 prescribes, without buffering it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, WebSocket
from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from starlette.types import Receive, Scope, Send

from model_store import StoreError

from ..engine import Engine, EngineError, Scored, store_failure
from ..settings import Settings
from .auth import Keys
from .errors import json_safe, status_of
from .feedback import answer_feedback
from .hot import engine_of
from .predict import answer_predict, finish_predict, start_predict
from .schemas import FeedbackRequest, PredictRequest

router = APIRouter(tags=["stream"])
TURN_EVERY = 16
"""Messages handled between two turns of the event loop. The server hands over every message of a
read at once, and handled in one go they would all wait for one store call, then leave together:
the client's next messages would come only after the whole batch, while the service idled during
its store call. A turn every so many messages sends what is scored so far to the store, and the
replies already stored to the client, while the rest is scored."""

Reply = dict[str, Any] | str
"""A refusal (``ok: false``, its status and detail), or an answer: the REST reply's JSON."""


@dataclass(frozen=True, slots=True)
class _Predicted:
    """A predict message scored on arrival, whose reply waits for its pending records to be stored."""

    message: PredictRequest
    scored: Scored


Pending = Reply | _Predicted | Awaitable[Reply]
"""What the sender answers a message with: a reply at hand, a scored prediction, or a task."""


class _PredictMessage(PredictRequest):
    type: Literal["predict"]
    id: Any = None


class _FeedbackMessage(FeedbackRequest):
    type: Literal["feedback"]
    id: Any = None


MESSAGE: TypeAdapter[_PredictMessage | _FeedbackMessage] = TypeAdapter(
    Annotated[_PredictMessage | _FeedbackMessage, Field(discriminator="type")]
)
"""A well-formed message decoded in one pass (pydantic-core's JSON parser) into the REST body
model; any other message is read again with ``json`` so that its refusal is the one
:func:`handle` words."""


def _error(status: int, field: str, message: str, kind: str) -> dict[str, Any]:
    """A refusal of the WebSocket's own (the message itself: too large, too frequent, not JSON)."""
    return {
        "ok": False,
        "status": status,
        "detail": [{"loc": [*field.split(".")], "msg": message, "type": kind}],
    }


def _engine_error(error: EngineError | StoreError) -> dict[str, Any]:
    """An engine refusal with the status, kind and retry advice REST answers it with
    (:mod:`service.api.errors`); ``retry_after`` is the ``Retry-After`` header's value. A store
    failure's outcome is unknown: retrying the same message is safe."""
    if isinstance(error, StoreError):
        error = store_failure(error)
    reply = _error(status_of(error), error.field, error.problem, error.kind)
    if (seconds := error.retry_after_seconds) is not None:
        reply["retry_after"] = seconds
    return reply


async def handle(engine: Engine, message: Any) -> Reply:
    """The reply to one message (without its id and type)."""
    if not isinstance(message, dict):
        return _error(422, "message", "must be a JSON object", "type_error")
    kind = message.get("type")
    fields = {k: v for k, v in message.items() if k not in ("type", "id")}
    try:
        if kind == "predict":
            result: BaseModel = await answer_predict(engine, PredictRequest.model_validate(fields))
        elif kind == "feedback":
            result = await answer_feedback(engine, FeedbackRequest.model_validate(fields))
        else:
            return _error(
                422, "type", f'must be "predict" or "feedback", got {json_safe(kind)!r}', "value_error"
            )
    except ValidationError as exc:
        detail = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        return {"ok": False, "status": 422, "detail": detail}
    except (EngineError, StoreError) as exc:
        return _engine_error(exc)
    return result.model_dump_json()


async def _answer(engine: Engine, message: _FeedbackMessage) -> Reply:
    """The reply to a feedback message decoded by :data:`MESSAGE`."""
    try:
        result = await answer_feedback(engine, message)
    except (EngineError, StoreError) as exc:
        return _engine_error(exc)
    return result.model_dump_json()


def _start(engine: Engine, message: _PredictMessage) -> Reply | _Predicted:
    """A predict message decoded by :data:`MESSAGE`, scored now (no task: the sender answers it
    once its pending records are stored), or its refusal."""
    try:
        return _Predicted(message, start_predict(engine, message))
    except EngineError as exc:
        return _engine_error(exc)


def _finish(engine: Engine, predicted: _Predicted) -> Reply:
    """The reply to a scored predict message whose pending records are stored (or failed)."""
    try:
        result = finish_predict(engine, predicted.message, predicted.scored)
    except (EngineError, StoreError) as exc:
        return _engine_error(exc)
    return result.model_dump_json()


class _RateLimit:
    """A token bucket: ``rate`` messages a second, bursts up to one second's worth."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.tokens = rate
        self.stamp = time.monotonic()

    def allow(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def wait_seconds(self) -> int:
        """Whole seconds (at least 1, like ``Retry-After``) until the bucket holds a message again."""
        return max(1, math.ceil((1.0 - self.tokens) / self.rate))


@router.websocket("/ws")
async def stream(websocket: WebSocket) -> None:
    """The socket through FastAPI's stack (before the service serves, and when its OpenTelemetry is
    on): :func:`serve_socket` over Starlette's checked ``receive`` and ``send``."""
    await serve_socket(websocket.scope, websocket.receive, websocket.send)


async def serve_socket(scope: Scope, receive: Receive, send: Send) -> None:
    """One socket's life, over plain ASGI: the handshake, the key check, then every message handled
    and answered in order until the client leaves. Once the service serves,
    :class:`~service.api.hot.ServiceApp` calls it ahead of FastAPI's stack, with the server's own
    ``receive`` and ``send`` (no layer of calls per message)."""
    engine = engine_of(scope)
    state = scope["app"].state
    settings: Settings = state.settings
    keys: Keys = state.keys
    authorization = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), None)
    allowed = keys.refusal(authorization, admin=False) is None
    if (await receive())["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    if not allowed:  # closed before accept, uvicorn would refuse the handshake with a bare 403
        reason = "missing or unknown API key (Authorization: Bearer <key>)"
        await send({"type": "websocket.close", "code": 1008, "reason": reason})
        return
    replies: asyncio.Queue[tuple[Any, Any, Pending] | None] = asyncio.Queue(settings.ws_queue_size)
    sender = asyncio.create_task(_send_in_order(engine, send, replies))
    limit = _RateLimit(settings.ws_max_messages_per_second)
    try:
        read = 0
        while (text := await _receive_text(receive)) is not None:
            item = _dispatch(engine, settings, limit, text)
            if replies.full():  # the client is ahead by ws_queue_size: stop reading until one leaves
                await replies.put(item)
            else:  # no coroutine per message for a put that cannot wait
                replies.put_nowait(item)
            read += 1
            if read % TURN_EVERY == 0:
                await asyncio.sleep(0)  # a turn of the loop: what is scored so far goes to the store
    finally:
        with contextlib.suppress(asyncio.QueueFull):
            replies.put_nowait(None)
        if not sender.done():
            await replies.put(None)
        with contextlib.suppress(Exception):
            await sender


def _dispatch(engine: Engine, settings: Settings, limit: _RateLimit, text: str) -> tuple[Any, Any, Pending]:
    """Start handling one message now; its reply is awaited in order by the sender."""
    message: Any = None
    if len(text) * 4 > settings.ws_max_message_bytes and len(text.encode()) > settings.ws_max_message_bytes:
        reply = _error(413, "message", f"is larger than {settings.ws_max_message_bytes} bytes", "too_large")
    elif not limit.allow():
        rate = settings.ws_max_messages_per_second
        reply = _error(
            429, "message", f"more than {rate:g} messages a second on this connection", "rate_limited"
        )
        reply["retry_after"] = limit.wait_seconds()
        message = _parsed(text)  # not handled, but its reply names it
    else:
        try:
            decoded = MESSAGE.validate_json(text)
        except ValidationError:
            pass
        else:
            if isinstance(decoded, _PredictMessage):
                return json_safe(decoded.id), decoded.type, _start(engine, decoded)
            return json_safe(decoded.id), decoded.type, asyncio.ensure_future(_answer(engine, decoded))
        try:
            message = json.loads(text)
        except ValueError as exc:
            reply = _error(422, "message", f"is not valid JSON ({exc})", "json_invalid")
        except RecursionError:
            reply = _error(422, "message", "is nested too deeply to be read as JSON", "json_invalid")
        else:
            return (*_ids(message), asyncio.ensure_future(handle(engine, message)))
    return (*_ids(message), reply)


def _parsed(text: str) -> Any:
    """The JSON of a message that will not be handled (for its id and type), or None."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _ids(message: Any) -> tuple[Any, Any]:
    """The ``id`` and ``type`` a reply echoes, bounded like a 422's ``input`` (a deeply nested
    ``id`` must not break the encoding of the reply, nor a NaN its strictness)."""
    if isinstance(message, dict):
        return json_safe(message.get("id")), json_safe(message.get("type"))
    return None, None


async def _receive_text(receive: Receive) -> str | None:
    """The next message's text (a binary message decoded as UTF-8), or None once the client left."""
    message = await receive()
    if message["type"] != "websocket.receive":
        return None
    if message.get("text") is not None:
        return str(message["text"])
    return bytes(message.get("bytes") or b"").decode("utf-8", errors="replace")


async def _send_in_order(
    engine: Engine, send: Send, replies: asyncio.Queue[tuple[Any, Any, Pending] | None]
) -> None:
    while (item := replies.get_nowait() if replies.qsize() else await replies.get()) is not None:
        message_id, kind, pending = item
        try:
            if isinstance(pending, _Predicted):
                if not pending.scored.stored.done():  # the messages of a tick share one store call
                    await pending.scored.settled()
                reply = _finish(engine, pending)
            elif isinstance(pending, dict | str):
                reply = pending
            else:
                reply = await pending
        except Exception as exc:  # never leave a message unanswered
            reply = _error(500, "server", f"internal error: {type(exc).__name__}", "internal")
        if isinstance(reply, str):  # the REST reply, serialised once
            head = f'{{"id": {_json(message_id)}, "type": {_json(kind)}'
            text = f'{head}, "ok": true, "status": 200, "result": {reply}}}'
        else:
            text = json.dumps({"id": message_id, "type": kind, **reply})
        await send({"type": "websocket.send", "text": text})


def _json(value: Any) -> str:
    """``json.dumps(value)``; an integer id and the two message types without the encoder."""
    if type(value) is int:
        return str(value)
    if value in ("predict", "feedback"):
        return f'"{value}"'
    return json.dumps(value)
