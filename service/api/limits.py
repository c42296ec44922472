"""Request-body size limit, as plain ASGI middleware (before any JSON is parsed)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def _detail(max_bytes: int) -> list[dict[str, Any]]:
    return [{"loc": ["body"], "msg": f"the body is larger than {max_bytes} bytes", "type": "body_too_large"}]


def too_large_body(max_bytes: int) -> bytes:
    """The 413 body for a request body over ``max_bytes``."""
    return json.dumps({"detail": _detail(max_bytes)}).encode()


class BodyTooLarge(HTTPException):
    """Raised while the body streams in; an HTTPException so that FastAPI passes it through."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, _detail(max_bytes))


class BodySizeLimit:
    """Answer 413 to a body over ``max_bytes``, by Content-Length or while it streams in."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        payload = too_large_body(self.max_bytes)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
