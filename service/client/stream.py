"""``WS /ws`` from the client: requests pipelined, answers matched by id, retries as over HTTP.

The protocol (``asyncapi.yaml``): each request is one JSON text message
``{"type": "predict" | "feedback", "id": ..., ...REST body...}``; the service answers each
exactly once, in order, echoing ``id``: ``{"id", "type", "ok": true, "status": 200,
"result": {...REST reply...}}`` or ``{"id", "type", "ok": false, "status", "detail"}``.

:class:`AsyncStream` keeps up to ``window`` requests in flight on one connection. Each
request gets a fresh integer id, and its answer is matched by that id (not by position, so a
retried request cannot be confused with the one before it). When the connection drops, every
request in flight learns it; idempotent ones (predictions, labels by prediction id) are sent
again on a new connection, the others raise :class:`~service.client.errors.ConnectionFailed`.
An error reply of status 503 is retried like an HTTP 503 (:mod:`service.client.retry`),
with backoff since a reply carries no ``Retry-After``. A socket the service closes with
1008 (no or unknown API key) raises :class:`~service.client.errors.Unauthorized`.

:class:`Stream` is the same from synchronous code: the :class:`AsyncStream` runs on an
event loop in a thread of its own, and ``submit_*`` return ``concurrent.futures.Future``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from . import payloads
from .calls import Label, LabelItem, pid_of, retryable_status
from .errors import ApiError, ConnectionFailed, ErrorDetail, Unauthorized, error_from
from .payloads import Features
from .retry import Attempts, RetryPolicy
from .types import FeedbackResult, Prediction

T = TypeVar("T")
POLICY_VIOLATION = 1008


class _Dropped(Exception):
    """The connection ended while a request waited for its answer."""

    def __init__(self, code: int | None, reason: str) -> None:
        super().__init__(f"WebSocket closed ({code}): {reason}")
        self.code = code
        self.reason = reason


@dataclass
class _Connection:
    socket: ClientConnection
    waiting: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None
    closed: _Dropped | None = None


def _close_code(exc: BaseException) -> int | None:
    if isinstance(exc, _Dropped):
        return exc.code
    if isinstance(exc, ConnectionClosed) and exc.rcvd is not None:
        return exc.rcvd.code
    return None


def _refusal(reason: str) -> Unauthorized:
    return Unauthorized(401, (ErrorDetail(("header", "Authorization"), reason, "unauthorized"),))


class AsyncStream:
    """A WebSocket session (``async with client.stream() as stream``).

    Answers are matched by id; a refusal without one (413, 429: the service did not read the
    message) is matched by order, which the service keeps. So each request is registered just
    before its frame is written, with nothing awaited in between.
    """

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        retry: RetryPolicy,
        window: int = 64,
        model: str | None = None,
        max_message_bytes: int = 2**24,
        open_timeout: float = 10.0,
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self.url = url
        self.headers = headers
        self.retry = retry
        self.model = model
        self.max_message_bytes = max_message_bytes
        self.open_timeout = open_timeout
        self._window = asyncio.Semaphore(window)
        self._ids = itertools.count(1)
        self._connection: _Connection | None = None
        self._connecting = asyncio.Lock()
        self._refused: Unauthorized | None = None
        self.connections = 0
        """Connections opened so far (reconnections included)."""

    async def __aenter__(self) -> AsyncStream:
        await self._connected()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.socket.close()
            if connection.reader is not None:
                await connection.reader

    # --- the calls ----------------------------------------------------------------------------

    async def predict(self, features: Features, *, model: str | None = None) -> Prediction:
        body = payloads.with_model({"features": payloads.features(features)}, model or self.model)
        return Prediction.model_validate(await self.request("predict", body, idempotent=True))

    async def predict_batch(self, instances: Any, *, model: str | None = None) -> list[Prediction]:
        body = payloads.with_model({"instances": payloads.instances(instances)}, model or self.model)
        result = await self.request("predict", body, idempotent=True)
        return [Prediction.model_validate(p) for p in result["predictions"]]

    async def feedback(self, prediction: str | Prediction, label: Label) -> FeedbackResult:
        body = {"prediction_id": pid_of(prediction), "label": label}
        return FeedbackResult.model_validate(await self.request("feedback", body, idempotent=True))

    async def feedback_batch(self, items: Sequence[LabelItem]) -> list[FeedbackResult]:
        body = {"items": [{"prediction_id": pid_of(p), "label": y} for p, y in items]}
        result = await self.request("feedback", body, idempotent=True)
        return [FeedbackResult.model_validate(r) for r in result["results"]]

    async def learn(self, features: Features, label: Label, *, model: str | None = None) -> FeedbackResult:
        """A labelled example never scored (not resent once sent: it would be learned twice)."""
        body = payloads.with_model(
            {"features": payloads.features(features), "label": label}, model or self.model
        )
        return FeedbackResult.model_validate(await self.request("feedback", body, idempotent=False))

    async def predict_many(
        self, instances: Sequence[Features], *, model: str | None = None
    ) -> list[Prediction]:
        """One ``predict`` message per instance, all pipelined; the answers in order."""
        return list(await asyncio.gather(*(self.predict(x, model=model) for x in instances)))

    async def feedback_many(self, items: Sequence[LabelItem]) -> list[FeedbackResult]:
        """One ``feedback`` message per label, all pipelined; the answers in order."""
        return list(await asyncio.gather(*(self.feedback(p, y) for p, y in items)))

    # --- one request, with its retries --------------------------------------------------------

    async def request(self, kind: str, body: dict[str, Any], *, idempotent: bool) -> Any:
        """Send one message and return its ``result``; raises the error reply as an exception."""
        attempts = Attempts(self.retry, kind, self.url)
        async with self._window:
            while True:
                attempts.next()
                retry_after: float | None = None
                sent = False
                try:
                    connection = await self._connected()
                    message_id = next(self._ids)
                    waiting = asyncio.get_running_loop().create_future()
                    connection.waiting[message_id] = waiting
                    text = payloads.encode({"type": kind, "id": message_id, **body}).decode()
                    try:
                        await connection.socket.send(text)
                        sent = True
                        reply = await waiting
                    finally:
                        connection.waiting.pop(message_id, None)
                        if waiting.done() and not waiting.cancelled():
                            waiting.exception()  # seen here, whichever way the request ended
                        else:
                            waiting.cancel()
                except (ConnectionClosed, _Dropped, OSError, InvalidHandshake, TimeoutError) as exc:
                    if _close_code(exc) == POLICY_VIOLATION:
                        raise self._refused or _refusal(str(exc)) from None
                    failure: ApiError | ConnectionFailed = ConnectionFailed(f"WebSocket {self.url}: {exc}")
                    retryable = idempotent or not sent
                else:
                    if reply.get("ok"):
                        return reply.get("result")
                    advised = reply.get("retry_after")  # the server's Retry-After, as REST sends it
                    retry_after = float(advised) if isinstance(advised, int | float) else None
                    failure = error_from(int(reply.get("status", 500)), reply, retry_after)
                    retryable = idempotent and retryable_status(failure)
                await asyncio.sleep(attempts.wait(failure, retryable, retry_after))

    async def _connected(self) -> _Connection:
        """The open connection, or a new one if the last one dropped."""
        async with self._connecting:
            if self._refused is not None:
                raise self._refused
            current = self._connection
            if current is not None and current.closed is None:
                return current
            socket = await connect(
                self.url,
                additional_headers=self.headers,
                max_size=self.max_message_bytes,
                open_timeout=self.open_timeout,
            )
            connection = _Connection(socket)
            connection.reader = asyncio.create_task(self._read(connection))
            self._connection = connection
            self.connections += 1
            return connection

    async def _read(self, connection: _Connection) -> None:
        """Hand each answer to the request waiting for its id; on close, fail every waiting one."""
        socket = connection.socket
        try:
            async for text in socket:
                reply = json.loads(text)
                message_id = reply.get("id") if isinstance(reply, dict) else None
                waiting = connection.waiting.get(message_id) if isinstance(message_id, int) else None
                if waiting is None and connection.waiting:
                    # a refusal of a message the service did not read (413 too large, 429 rate
                    # limited) carries no id: answers come in order, so it is the oldest one's
                    waiting = next(iter(connection.waiting.values()))
                if waiting is not None and not waiting.done():
                    waiting.set_result(reply)
        except ConnectionClosed:
            pass
        finally:
            code = socket.close_code
            reason = socket.close_reason or "connection closed"
            dropped = _Dropped(code, reason)
            connection.closed = dropped
            if code == POLICY_VIOLATION:
                self._refused = _refusal(reason)
            for waiting in connection.waiting.values():
                if not waiting.done():
                    waiting.set_exception(dropped)


class Stream:
    """:class:`AsyncStream` for synchronous code (``with client.stream() as stream``)."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        retry: RetryPolicy,
        window: int = 64,
        model: str | None = None,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="acog-stream", daemon=True)
        self._thread.start()
        self._stream = AsyncStream(url, headers, retry, window, model)
        try:
            self._wait(self._stream.__aenter__())
        except BaseException:
            self._stop_loop()
            raise

    def __enter__(self) -> Stream:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def connections(self) -> int:
        return self._stream.connections

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._wait(self._stream.aclose())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _wait(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._submit(coroutine).result()

    # blocking calls
    def predict(self, features: Features, *, model: str | None = None) -> Prediction:
        return self._wait(self._stream.predict(features, model=model))

    def predict_batch(self, instances: Any, *, model: str | None = None) -> list[Prediction]:
        return self._wait(self._stream.predict_batch(instances, model=model))

    def feedback(self, prediction: str | Prediction, label: Label) -> FeedbackResult:
        return self._wait(self._stream.feedback(prediction, label))

    def feedback_batch(self, items: Sequence[LabelItem]) -> list[FeedbackResult]:
        return self._wait(self._stream.feedback_batch(items))

    def learn(self, features: Features, label: Label, *, model: str | None = None) -> FeedbackResult:
        return self._wait(self._stream.learn(features, label, model=model))

    # pipelined
    def predict_many(self, instances: Sequence[Features], *, model: str | None = None) -> list[Prediction]:
        """One message per instance, up to ``window`` in flight; the answers in order."""
        return self._wait(self._stream.predict_many(instances, model=model))

    def feedback_many(self, items: Sequence[LabelItem]) -> list[FeedbackResult]:
        return self._wait(self._stream.feedback_many(items))

    def submit_predict(
        self, features: Features, *, model: str | None = None
    ) -> concurrent.futures.Future[Prediction]:
        """Send now, answer later: the future resolves when this prediction's answer arrives."""
        return self._submit(self._stream.predict(features, model=model))

    def submit_feedback(
        self, prediction: str | Prediction, label: Label
    ) -> concurrent.futures.Future[FeedbackResult]:
        return self._submit(self._stream.feedback(prediction, label))
