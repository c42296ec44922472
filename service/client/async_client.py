"""``AsyncClient``: :class:`service.client.Client` for asyncio, on ``httpx.AsyncClient``.

Same calls, same retries and exceptions; every call is awaited.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import httpx

from . import calls
from .calls import Call, Label, LabelItem
from .errors import ConnectionFailed, NotFound
from .payloads import Features
from .retry import Attempts, RetryPolicy
from .stream import AsyncStream
from .sync_client import DEFAULT_URL, auth_headers, ws_url
from .types import Checkpoint, FeedbackResult, Health, ModelInfo, ModelSummary, Prediction, RetainedCheckpoint

T = TypeVar("T")


class AsyncClient:
    """The API over HTTP from asyncio; see :class:`service.client.Client` for each call."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.retry = retry or RetryPolicy()
        self.http = httpx.AsyncClient(base_url=self.url, headers=auth_headers(api_key), timeout=timeout)
        self.requests = 0

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def run(self, call: Call[T]) -> T:
        attempts = Attempts(self.retry, call.method, call.path)
        while True:
            attempt = attempts.next()
            self.requests += 1
            try:
                response = await self.http.request(call.method, call.path, **calls.request_options(call))
            except httpx.TransportError as exc:
                failure = calls.transport_failure(call, exc)
            else:
                result = calls.outcome(call, response, attempt)
                if isinstance(result, tuple):
                    return result[0]
                failure = result
            await asyncio.sleep(attempts.wait(failure.error, failure.retryable, failure.retry_after))

    async def predict(self, features: Features, *, model: str | None = None) -> Prediction:
        return await self.run(calls.predict(features, model or self.model))

    async def predict_batch(self, instances: Any, *, model: str | None = None) -> list[Prediction]:
        return await self.run(calls.predict_batch(instances, model or self.model))

    async def feedback(self, prediction: str | Prediction, label: Label) -> FeedbackResult:
        return await self.run(calls.feedback(prediction, label))

    async def feedback_batch(self, items: Sequence[LabelItem]) -> list[FeedbackResult]:
        return await self.run(calls.feedback_batch(items))

    async def learn(self, features: Features, label: Label, *, model: str | None = None) -> FeedbackResult:
        return await self.run(calls.learn(features, label, model or self.model))

    async def learn_batch(
        self, examples: Sequence[tuple[Features, Label]], *, model: str | None = None
    ) -> list[FeedbackResult]:
        return await self.run(calls.learn_batch(examples, model or self.model))

    async def put_model(self, name: str, config: Mapping[str, Any], *, replace: bool = False) -> ModelInfo:
        return await self.run(calls.put_model(name, config, replace))

    async def get_model(self, name: str) -> ModelInfo:
        return await self.run(calls.get_model(name))

    async def list_models(self) -> list[ModelSummary]:
        return await self.run(calls.list_models())

    async def delete_model(self, name: str) -> None:
        await self.run(calls.delete_model(name))

    async def checkpoint(self, name: str) -> Checkpoint:
        return await self.run(calls.checkpoint(name))

    async def list_checkpoints(self, name: str) -> list[RetainedCheckpoint]:
        return await self.run(calls.list_checkpoints(name))

    async def rollback(self, name: str, version: int) -> ModelInfo:
        """:meth:`service.client.Client.rollback`."""
        return await self.run(calls.rollback(name, version))

    async def set_drift_policy(self, name: str, on_drift: str) -> ModelInfo:
        return await self.run(calls.set_drift_policy(name, on_drift))

    async def put_challenger(
        self, name: str, challenger: str, config: Mapping[str, Any], start: str | None = None
    ) -> ModelInfo:
        """:meth:`service.client.Client.put_challenger`."""
        return await self.run(calls.put_challenger(name, challenger, config, start))

    async def delete_challenger(self, name: str, challenger: str) -> None:
        await self.run(calls.delete_challenger(name, challenger))

    async def promote_challenger(self, name: str, challenger: str) -> ModelInfo:
        """:meth:`service.client.Client.promote_challenger`."""
        return await self.run(calls.promote_challenger(name, challenger))

    async def change_schema(self, name: str, change: Mapping[str, Any]) -> ModelInfo:
        """:meth:`service.client.Client.change_schema`."""
        return await self.run(calls.change_schema(name, change))

    async def ensure_model(self, name: str, config: Mapping[str, Any]) -> ModelInfo:
        try:
            return await self.get_model(name)
        except NotFound:
            return await self.put_model(name, config)

    async def health(self) -> Health:
        return await self.run(calls.health("/healthz"))

    async def ready(self) -> Health:
        return await self.run(calls.health("/readyz"))

    async def metrics(self) -> str:
        return await self.run(calls.metrics())

    async def wait_ready(self, timeout: float = 60.0) -> Health:
        deadline = time.monotonic() + timeout
        while True:
            try:
                response = await self.http.get("/readyz")
                if response.status_code == 200:
                    return Health.model_validate_json(response.content)
            except httpx.TransportError:
                pass
            if time.monotonic() >= deadline:
                raise ConnectionFailed(f"{self.url} was not ready within {timeout:g} s")
            await asyncio.sleep(0.1)

    def stream(self, *, window: int = 64) -> AsyncStream:
        """``async with client.stream() as stream``: see :class:`AsyncStream`."""
        return AsyncStream(ws_url(self.url), auth_headers(self.api_key), self.retry, window, self.model)
