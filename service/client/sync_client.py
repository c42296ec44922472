"""``Client``: the service's API from synchronous Python, on httpx.

>>> from service.client import Client
>>> with Client("http://127.0.0.1:8000", api_key="...") as client:       # doctest: +SKIP
...     client.put_model("cards", {"n_features": 4, "objective": "cost", "c_p": 0.9})
...     p = client.predict([0.2, 0.1, 0.0, 0.9], model="cards")
...     client.feedback(p, -1)                    # later, when the truth is known

Every call retries what is safe to retry (see :mod:`service.client.retry`) and raises an
:class:`~service.client.errors.ApiError` subclass naming the server's field and message
otherwise.
"""

from __future__ import annotations

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
from .stream import Stream
from .types import Checkpoint, FeedbackResult, Health, ModelInfo, ModelSummary, Prediction, RetainedCheckpoint

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8000"


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def ws_url(base_url: str) -> str:
    """The WebSocket endpoint of a service at ``base_url`` (http -> ws, https -> wss)."""
    base = base_url.rstrip("/")
    scheme, _, rest = base.partition("://")
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/ws"


class Client:
    """The API over HTTP. ``model`` is the model used when a call names none (else the
    server's default model). ``retry`` bounds retries; ``timeout`` is httpx's, per attempt."""

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
        self.http = httpx.Client(base_url=self.url, headers=auth_headers(api_key), timeout=timeout)
        self.requests = 0
        """HTTP requests sent, retries included."""

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def run(self, call: Call[T]) -> T:
        """Send ``call``, retrying as its policy allows; its value, or the last failure raised."""
        attempts = Attempts(self.retry, call.method, call.path)
        while True:
            attempt = attempts.next()
            self.requests += 1
            try:
                response = self.http.request(call.method, call.path, **calls.request_options(call))
            except httpx.TransportError as exc:
                failure = calls.transport_failure(call, exc)
            else:
                result = calls.outcome(call, response, attempt)
                if isinstance(result, tuple):
                    return result[0]
                failure = result
            time.sleep(attempts.wait(failure.error, failure.retryable, failure.retry_after))

    # --- predictions and labels ---------------------------------------------------------------

    def predict(self, features: Features, *, model: str | None = None) -> Prediction:
        """Score one instance (dense, :class:`~service.client.payloads.Sparse` or named)."""
        return self.run(calls.predict(features, model or self.model))

    def predict_batch(self, instances: Any, *, model: str | None = None) -> list[Prediction]:
        """Score a batch in one request; the predictions come back in the order of ``instances``."""
        return self.run(calls.predict_batch(instances, model or self.model))

    def feedback(self, prediction: str | Prediction, label: Label) -> FeedbackResult:
        """The true label of an earlier prediction (by id, or the :class:`Prediction` itself).

        Raises :class:`~service.client.errors.NotFound` (unknown or expired id),
        :class:`~service.client.errors.Gone` (model replaced) or
        :class:`~service.client.errors.LabelConflict` (labelled before with another label).
        """
        return self.run(calls.feedback(prediction, label))

    def feedback_batch(self, items: Sequence[LabelItem]) -> list[FeedbackResult]:
        """Labels in one request: ``[(prediction or id, label), ...]``. An item that cannot be
        applied carries its own ``status`` and ``error``; the others are applied regardless."""
        return self.run(calls.feedback_batch(items))

    def learn(self, features: Features, label: Label, *, model: str | None = None) -> FeedbackResult:
        """A labelled example that was never scored: predicted and learned when applied. Not
        retried once sent (a repeat would be learned twice)."""
        return self.run(calls.learn(features, label, model or self.model))

    def learn_batch(
        self, examples: Sequence[tuple[Features, Label]], *, model: str | None = None
    ) -> list[FeedbackResult]:
        return self.run(calls.learn_batch(examples, model or self.model))

    # --- models -------------------------------------------------------------------------------

    def put_model(self, name: str, config: Mapping[str, Any], *, replace: bool = False) -> ModelInfo:
        """Create model ``name`` (the configuration is ``PUT /models/{name}``'s body). ``replace``
        starts a new generation of an existing model, learning from scratch."""
        return self.run(calls.put_model(name, config, replace))

    def get_model(self, name: str) -> ModelInfo:
        return self.run(calls.get_model(name))

    def list_models(self) -> list[ModelSummary]:
        return self.run(calls.list_models())

    def delete_model(self, name: str) -> None:
        self.run(calls.delete_model(name))

    def checkpoint(self, name: str) -> Checkpoint:
        """Write the model's checkpoint now (admin key)."""
        return self.run(calls.checkpoint(name))

    def list_checkpoints(self, name: str) -> list[RetainedCheckpoint]:
        """The model's retained checkpoints, newest first: the versions :meth:`rollback` restores."""
        return self.run(calls.list_checkpoints(name))

    def rollback(self, name: str, version: int) -> ModelInfo:
        """A new generation whose state is the retained checkpoint at ``version`` (admin key); the
        labels after it are forgotten. Sent once: after a lost answer, look at ``generation``."""
        return self.run(calls.rollback(name, version))

    def set_drift_policy(self, name: str, on_drift: str) -> ModelInfo:
        """``"reset"``: a fresh learner after each drift the model's detector signals; ``"none"``."""
        return self.run(calls.set_drift_policy(name, on_drift))

    def put_challenger(
        self, name: str, challenger: str, config: Mapping[str, Any], start: str | None = None
    ) -> ModelInfo:
        """Add a challenger: ``config`` learns the model's labels from the next one on, in shadow
        (admin key); with ``start="log"`` it first learns the retained history of the model's log
        (``state["challengers"][challenger]["history"]["labels"]`` says how many). Its measures are
        in ``get_model(name).state["challengers"]``."""
        return self.run(calls.put_challenger(name, challenger, config, start))

    def delete_challenger(self, name: str, challenger: str) -> None:
        self.run(calls.delete_challenger(name, challenger))

    def promote_challenger(self, name: str, challenger: str) -> ModelInfo:
        """Make the challenger the model: a new generation with its state, bit for bit."""
        return self.run(calls.promote_challenger(name, challenger))

    def change_schema(self, name: str, change: Mapping[str, Any]) -> ModelInfo:
        """Declare a feature migration on a model with named features (admin key): the new
        ``feature_names``, or the ``vanished`` and ``augmented`` names. The model keeps its
        generation; a request naming a vanished feature is refused from then on."""
        return self.run(calls.change_schema(name, change))

    def ensure_model(self, name: str, config: Mapping[str, Any]) -> ModelInfo:
        """The model ``name``, created with ``config`` if it does not exist (an existing one is
        left as it is, whatever its configuration)."""
        try:
            return self.get_model(name)
        except NotFound:
            return self.put_model(name, config)

    # --- operations ---------------------------------------------------------------------------

    def health(self) -> Health:
        return self.run(calls.health("/healthz"))

    def ready(self) -> Health:
        """``/readyz``; raises :class:`~service.client.errors.Unavailable` while not ready."""
        return self.run(calls.health("/readyz"))

    def metrics(self) -> str:
        """The Prometheus exposition text of ``/metrics``."""
        return self.run(calls.metrics())

    def wait_ready(self, timeout: float = 60.0) -> Health:
        """Poll ``/readyz`` until it answers 200, for at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                response = self.http.get("/readyz")
                if response.status_code == 200:
                    return Health.model_validate_json(response.content)
            except httpx.TransportError:
                pass
            if time.monotonic() >= deadline:
                raise ConnectionFailed(f"{self.url} was not ready within {timeout:g} s")
            time.sleep(0.1)

    # --- the WebSocket ------------------------------------------------------------------------

    def stream(self, *, window: int = 64) -> Stream:
        """A WebSocket session: requests pipelined, up to ``window`` in flight, answers matched
        by id. Use it as a context manager."""
        return Stream(ws_url(self.url), auth_headers(self.api_key), self.retry, window, self.model)
