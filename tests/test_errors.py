"""An engine refusal is answered with the same status, kind and retry advice over REST and the
WebSocket: both read them from the error (:mod:`service.engine.errors`), store failures included."""

from __future__ import annotations

import json

import pytest

from model_store import StoreError, StoreUnavailable
from service.api.errors import engine_error_response, status_of
from service.api.ws import _engine_error
from service.engine import (
    EngineError,
    LabelConflict,
    LimitExceeded,
    ModelUnavailable,
    StoreLost,
    TooLarge,
    UnknownModel,
    UnknownPrediction,
    store_failure,
)

ERRORS: list[EngineError] = [
    UnknownModel("model", "no model 'x'"),
    UnknownPrediction("prediction_id", "expired", "expired"),
    LabelConflict("label", "was -1"),
    LimitExceeded("features", "too many"),
    TooLarge("instances", "too many"),
    ModelUnavailable("model", "recovering"),
    StoreLost("store", "lost its data"),
    store_failure(StoreUnavailable("down", retry_after=2.5)),
    store_failure(StoreError("broken")),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{type(e).__name__}-{e.kind}")
def test_rest_and_websocket_answer_alike(error: EngineError) -> None:
    rest = engine_error_response(error)
    ws = _engine_error(error)
    body = json.loads(bytes(rest.body))
    assert ws["status"] == rest.status_code == status_of(error)
    assert ws["detail"][0]["type"] == body["detail"][0]["type"] == error.kind
    assert ws["detail"][0]["msg"] == body["detail"][0]["msg"] == error.problem
    header = rest.headers.get("Retry-After")
    assert ws.get("retry_after") == (None if header is None else int(header))
    assert (header is None) == (error.retry_after is None)


def test_retry_advice_is_whole_seconds_never_early() -> None:
    assert store_failure(StoreUnavailable("down", retry_after=2.5)).retry_after_seconds == 3
    assert store_failure(StoreUnavailable("down", retry_after=0.1)).retry_after_seconds == 1
    assert store_failure(StoreError("broken")).kind == "store_error"
    assert ModelUnavailable("model", "recovering").retry_after_seconds == 5
    assert LabelConflict("label", "was -1").retry_after_seconds is None
