"""The AsyncAPI 3.0 document of ``WS /ws``, generated from the pydantic models of its messages
(``acog export-asyncapi``; ``tests/test_asyncapi.py`` checks ``asyncapi.yaml`` for drift and
real replies against it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from . import __version__
from .api.stream_schemas import ErrorReply, FeedbackMessage, FeedbackReply, PredictMessage, PredictReply
from .settings import Settings

REF = "#/components/schemas/{model}"
PID = "cards:1:1a20255e8e1-02ce6aed8bd8dc79"
PREDICTION = {"prediction_id": PID, "label": 1, "score": 0.0, "model": "cards", "model_version": 0,
              "stored": True}  # fmt: skip
LABELLED = {
    "prediction_id": PID,
    "model": "cards",
    "applied": True,
    "duplicate": False,
    "updated": True,
    "model_version": 1,
    "delay_seconds": 0.11,
    "status": 200,
    "error": None,
}
NOT_FINITE = {"loc": ["features", "dense", 2], "msg": "Input should be a finite number",
              "type": "finite_number"}  # fmt: skip
EXAMPLES: dict[str, dict[str, Any]] = {
    "predict": {"type": "predict", "id": 1, "model": "cards", "features": [0.2, 0.1, 0.0, 0.9]},
    "feedback": {"type": "feedback", "id": 2, "prediction_id": PID, "label": -1},
    "predictReply": {"id": 1, "type": "predict", "ok": True, "status": 200, "result": PREDICTION},
    "feedbackReply": {"id": 2, "type": "feedback", "ok": True, "status": 200, "result": LABELLED},
    "errorReply": {"id": 3, "type": "predict", "ok": False, "status": 422, "detail": [NOT_FINITE]},
}


def _default(name: str) -> Any:
    return Settings.model_fields[name].default


def description() -> str:
    return f"""\
Predictions and labels as a stream over one WebSocket, with the semantics of `POST /predict`
and `POST /feedback`.

**Messages.** Each text frame is one JSON object with `"type": "predict"` or `"feedback"`, an
optional `id` (any JSON value), and the fields of the REST body. Each gets exactly one reply,
carrying the same `id` and `type`: `{{"ok": true, "status": 200, "result": ...}}` with the REST
reply, or `{{"ok": false, "status": ..., "detail": [{{"loc", "msg", "type"}}]}}` with the status and
the detail the same request would get over HTTP. A malformed message (not JSON, not an object,
unknown `type`, wrong fields) gets an error reply and the socket stays open.

**Ordering.** Messages are handled concurrently and answered in the order they came. Labels
sent in separate messages are applied in the order they reach the model's label log, which
need not be the order of the messages: each reply's `model_version` says where its label landed.
A batch (`instances`, `items`) in one message keeps its order.

**Retries.** A 503 reply (store unavailable) means the outcome is unknown: send the same message
again (a label by prediction id counts once). A 429 reply (too many messages) was not handled: send
it again. Both carry `retry_after`, the seconds to wait. Every other error is final.

**Limits** (the service's settings, defaults shown). At most `ACOG_WS_QUEUE_SIZE` =
{_default("ws_queue_size")} messages in flight per connection, after which the server stops reading
(TCP backpressure). A message over `ACOG_WS_MAX_MESSAGE_BYTES` = {_default("ws_max_message_bytes")}
bytes gets a 413 reply; more than `ACOG_WS_MAX_MESSAGES_PER_SECOND` =
{_default("ws_max_messages_per_second"):g} messages a second get 429 replies; a frame over four
times the message limit is not read: the socket is closed with code 1009. `ACOG_MAX_BATCH`
bounds `instances` and `items` (413).

**Compression.** permessage-deflate is not negotiated unless `ACOG_WS_COMPRESSION` =
{str(_default("ws_compression")).lower()} is set to true (uvicorn; Granian does not offer it): the messages
are small, and compressing each one costs both ends more CPU than it saves on a local network.

**Authentication.** With API keys configured, the handshake must carry `Authorization: Bearer
<key>`; without an allowed key the socket is accepted and closed at once with code 1008 and the
reason.
"""


def document() -> dict[str, Any]:
    models: list[type[BaseModel]] = [PredictMessage, FeedbackMessage, PredictReply, FeedbackReply, ErrorReply]
    _, schemas = models_json_schema(
        [(m, "validation" if m in (PredictMessage, FeedbackMessage) else "serialization") for m in models],
        ref_template=REF,
    )
    ref = {name: {"$ref": f"#/components/messages/{name}"} for name in ("predict", "feedback",
           "predictReply", "feedbackReply", "errorReply")}  # fmt: skip
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "acog-service stream (WS /ws)",
            "version": __version__,
            "description": description(),
        },
        "servers": {
            "local": {
                "host": "127.0.0.1:8000",
                "protocol": "ws",
                "description": "acog serve (ACOG_HOST, ACOG_PORT); wss behind a TLS proxy",
                "security": [{"$ref": "#/components/securitySchemes/apiKey"}],
            }
        },
        "channels": {
            "stream": {
                "address": "/ws",
                "title": "Predictions and labels",
                "messages": ref,
            }
        },
        "operations": {
            "predict": {
                "action": "receive",
                "channel": {"$ref": "#/channels/stream"},
                "summary": "Score one instance (features) or a batch (instances)",
                "messages": [{"$ref": "#/channels/stream/messages/predict"}],
                "reply": {
                    "channel": {"$ref": "#/channels/stream"},
                    "messages": [
                        {"$ref": "#/channels/stream/messages/predictReply"},
                        {"$ref": "#/channels/stream/messages/errorReply"},
                    ],
                },
            },
            "feedback": {
                "action": "receive",
                "channel": {"$ref": "#/channels/stream"},
                "summary": "Label an earlier prediction (or a batch), or learn an example never scored",
                "messages": [{"$ref": "#/channels/stream/messages/feedback"}],
                "reply": {
                    "channel": {"$ref": "#/channels/stream"},
                    "messages": [
                        {"$ref": "#/channels/stream/messages/feedbackReply"},
                        {"$ref": "#/channels/stream/messages/errorReply"},
                    ],
                },
            },
        },
        "components": {
            "messages": {
                name: _message(model, EXAMPLES[name])
                for name, model in (
                    ("predict", PredictMessage),
                    ("feedback", FeedbackMessage),
                    ("predictReply", PredictReply),
                    ("feedbackReply", FeedbackReply),
                    ("errorReply", ErrorReply),
                )
            },
            "schemas": schemas["$defs"],
            "securitySchemes": {
                "apiKey": {
                    "type": "httpApiKey",
                    "name": "Authorization",
                    "in": "header",
                    "description": "Bearer <key>: ACOG_API_KEYS or ACOG_ADMIN_KEYS",
                }
            },
        },
    }


def _message(model: type[BaseModel], example: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": model.__name__,
        "title": model.__name__,
        "summary": (model.__doc__ or "").strip().splitlines()[0],
        "contentType": "application/json",
        "payload": {"$ref": REF.format(model=model.__name__)},
        "examples": [{"payload": example}],
    }
