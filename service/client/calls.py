"""Every call of the API described once, apart from any I/O: what to send, whether it is safe
to repeat, and how to read the answer. :class:`service.client.Client` and
:class:`service.client.AsyncClient` only send these and sleep between attempts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter

from . import payloads
from .errors import ApiError, ConnectionFailed, error_from_text
from .payloads import Features
from .retry import parse_retry_after
from .types import Checkpoint, FeedbackResult, Health, ModelInfo, ModelSummary, Prediction, RetainedCheckpoint

T = TypeVar("T")
Label = int | float
LabelItem = tuple["str | Prediction", Label]
"""A label for an earlier prediction: ``(prediction_id or the Prediction itself, label)``."""


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[bytes], T]
    body: Any = None
    params: Mapping[str, str] | None = None
    idempotent: bool = True
    """Safe to send again when its outcome is unknown (see :mod:`service.client.retry`)."""
    missing_ok: bool = False
    """A 404 on a repeated attempt means an earlier attempt did it (``DELETE``)."""

    @property
    def content(self) -> bytes | None:
        return None if self.body is None else payloads.encode(self.body)


def _list_of(model: type[T], key: str) -> Callable[[bytes], list[T]]:
    adapter = TypeAdapter(dict[str, list[model]])  # type: ignore[valid-type]

    def parse(content: bytes) -> list[T]:
        out: list[T] = adapter.validate_json(content)[key]
        return out

    return parse


def _one(model: type[Any]) -> Callable[[bytes], Any]:
    return model.model_validate_json


def _nothing(content: bytes) -> None:
    return None


def _text(content: bytes) -> str:
    return content.decode()


def pid_of(prediction: str | Prediction) -> str:
    return prediction if isinstance(prediction, str) else prediction.prediction_id


def name_path(name: str) -> str:
    return f"/models/{quote(name, safe='')}"


# --- predictions and labels -----------------------------------------------------------------


def predict(features: Features, model: str | None) -> Call[Prediction]:
    body = payloads.with_model({"features": payloads.features(features)}, model)
    return Call("POST", "/predict", _one(Prediction), body)


def predict_batch(instances: Any, model: str | None) -> Call[list[Prediction]]:
    body = payloads.with_model({"instances": payloads.instances(instances)}, model)
    return Call("POST", "/predict", _list_of(Prediction, "predictions"), body)


def feedback(prediction: str | Prediction, label: Label) -> Call[FeedbackResult]:
    body = {"prediction_id": pid_of(prediction), "label": label}
    return Call("POST", "/feedback", _one(FeedbackResult), body)


def feedback_batch(items: Sequence[LabelItem]) -> Call[list[FeedbackResult]]:
    body = {"items": [{"prediction_id": pid_of(p), "label": y} for p, y in items]}
    return Call("POST", "/feedback", _list_of(FeedbackResult, "results"), body)


def learn(features: Features, label: Label, model: str | None) -> Call[FeedbackResult]:
    """A labelled example never scored: not idempotent (each copy would be learned)."""
    body = payloads.with_model({"features": payloads.features(features), "label": label}, model)
    return Call("POST", "/feedback", _one(FeedbackResult), body, idempotent=False)


def learn_batch(examples: Sequence[tuple[Features, Label]], model: str | None) -> Call[list[FeedbackResult]]:
    items = [{"features": payloads.features(x), "label": y} for x, y in examples]
    body = payloads.with_model({"items": items}, model)
    return Call("POST", "/feedback", _list_of(FeedbackResult, "results"), body, idempotent=False)


# --- models ---------------------------------------------------------------------------------


def put_model(name: str, config: Mapping[str, Any], replace: bool) -> Call[ModelInfo]:
    """Create a model. ``replace`` asks for a new generation of an existing one: not idempotent
    (a repeat would start yet another generation), so it is sent once."""
    params = {"replace": "true"} if replace else None
    return Call("PUT", name_path(name), _one(ModelInfo), dict(config), params, idempotent=not replace)


def get_model(name: str) -> Call[ModelInfo]:
    return Call("GET", name_path(name), _one(ModelInfo))


def list_models() -> Call[list[ModelSummary]]:
    return Call("GET", "/models", _list_of(ModelSummary, "models"))


def delete_model(name: str) -> Call[None]:
    return Call("DELETE", name_path(name), _nothing, missing_ok=True)


def checkpoint(name: str) -> Call[Checkpoint]:
    return Call("POST", f"{name_path(name)}/checkpoint", _one(Checkpoint))


def change_schema(name: str, change: Mapping[str, Any]) -> Call[ModelInfo]:
    """Declare a feature migration: ``{"feature_names": [...]}`` or ``{"vanished": [...],
    "augmented": [...]}``. Never applied twice, but not retried on an unknown outcome: once the
    first attempt applied, a repeat is refused (422: the change no longer fits the schema)."""
    return Call("POST", f"{name_path(name)}/schema", _one(ModelInfo), dict(change), idempotent=False)


def list_checkpoints(name: str) -> Call[list[RetainedCheckpoint]]:
    return Call("GET", f"{name_path(name)}/checkpoints", _list_of(RetainedCheckpoint, "checkpoints"))


def rollback(name: str, version: int) -> Call[ModelInfo]:
    """A new generation from the retained checkpoint at ``version``: not idempotent (a repeat would
    roll the new generation back), so it is sent once."""
    body = {"version": version}
    return Call("POST", f"{name_path(name)}/rollback", _one(ModelInfo), body, idempotent=False)


def set_drift_policy(name: str, on_drift: str) -> Call[ModelInfo]:
    return Call("PUT", f"{name_path(name)}/drift_policy", _one(ModelInfo), {"on_drift": on_drift})


def challenger_path(name: str, challenger: str) -> str:
    return f"{name_path(name)}/challengers/{quote(challenger, safe='')}"


def put_challenger(
    name: str, challenger: str, config: Mapping[str, Any], start: str | None = None
) -> Call[ModelInfo]:
    """Add a challenger; the same configuration again changes nothing (so a retry is safe).
    ``start``: ``"now"`` (the server's default) or ``"log"`` (first the retained history)."""
    body = dict(config)
    if start is not None:
        body["start"] = start
    return Call("PUT", challenger_path(name, challenger), _one(ModelInfo), body)


def delete_challenger(name: str, challenger: str) -> Call[None]:
    return Call("DELETE", challenger_path(name, challenger), _nothing, missing_ok=True)


def promote_challenger(name: str, challenger: str) -> Call[ModelInfo]:
    """Make the challenger the model (a new generation): sent once, never retried."""
    return Call("POST", f"{challenger_path(name, challenger)}/promote", _one(ModelInfo), idempotent=False)


def health(path: str) -> Call[Health]:
    return Call("GET", path, _one(Health))


def metrics() -> Call[str]:
    return Call("GET", "/metrics", _text)


# --- outcomes -------------------------------------------------------------------------------

SENT_NOTHING = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
"""Transport errors raised before the request left: safe to retry any call."""


@dataclass(frozen=True)
class Failure:
    error: ApiError | ConnectionFailed
    retryable: bool
    retry_after: float | None = None


def retryable_status(error: ApiError) -> bool:
    """502/504 (a proxy), and 503 unless it is a model that cannot serve (no ``Retry-After``)."""
    if error.status in (502, 504):
        return True
    if error.status == 503:
        return error.retry_after is not None or error.kind != "model_unavailable"
    return False


def outcome(call: Call[T], response: httpx.Response, attempt: int) -> tuple[T] | Failure:
    """``(value,)`` for a success, else the failure and whether to try again."""
    if response.is_success:
        return (call.parse(response.content),)
    if call.missing_ok and response.status_code == 404 and attempt > 1:
        return (call.parse(b""),)
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    error = error_from_text(response.status_code, response.text, retry_after)
    return Failure(error, call.idempotent and retryable_status(error), retry_after)


def request_options(call: Call[Any]) -> dict[str, Any]:
    """What ``httpx``'s ``request`` sends for ``call`` besides its method and path."""
    return {
        "content": call.content,
        "params": call.params,
        "headers": {"Content-Type": "application/json"} if call.body is not None else None,
    }


def transport_failure(call: Call[Any], exc: httpx.TransportError) -> Failure:
    error = ConnectionFailed(f"{call.method} {call.path}: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return Failure(error, call.idempotent or isinstance(exc, SENT_NOTHING))
