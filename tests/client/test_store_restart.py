"""Retries across a Redis restart: every label gets through, none is applied twice.

A thread labels 200 stored predictions one request at a time (over HTTP, then over the
WebSocket) while the test kills the service's Redis (SIGKILL, as in a crash) and starts it
again a moment later. While Redis is down the service answers ``/feedback`` with 503 and
``Retry-After``; the client waits that long and sends the same label again. A label whose
first attempt reached Redis before it died is answered as a duplicate the second time, and
counts once: at the end the model has applied exactly one update per prediction.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from service.client import ApiError, Client, FeedbackResult, Prediction, RetryEvent, RetryPolicy

from .conftest import N_FEATURES, German, Served, serve

N_LABELS = 200


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A service whose Redis each test restarts (each test uses a model of its own)."""
    with serve(tmp_path_factory.mktemp("outage")) as running:
        yield running


def label_through_a_restart(
    served: Served,
    send: Callable[[Prediction, int], FeedbackResult],
    predictions: list[Prediction],
    y: list[int],
) -> list[FeedbackResult]:
    """Send every label with ``send`` in a thread; kill Redis after the 50th, restart it 1.5 s later."""
    results: list[FeedbackResult] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for prediction, label in zip(predictions, y, strict=True):
                results.append(send(prediction, label))
        except BaseException as exc:  # surfaced by the test
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    deadline = time.monotonic() + 30
    while len(results) < 50 and not errors:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    served.redis.stop()
    time.sleep(1.5)
    served.redis.start()
    thread.join(60)
    assert not errors, errors
    return results


def check_counted_once(client: Client, model: str, results: list[FeedbackResult]) -> None:
    assert len(results) == N_LABELS
    assert all(r.ok and (r.applied or r.duplicate) for r in results), [r for r in results if not r.ok]
    applied = [r.model_version for r in results if r.applied and not r.duplicate]
    assert len(applied) == len(set(applied))
    assert client.get_model(model).version == N_LABELS  # one update per prediction, none twice


def test_http_labels_are_retried_across_a_redis_restart(outage: Served, german: German) -> None:
    events: list[RetryEvent] = []
    retry = RetryPolicy(attempts=40, deadline=60.0, on_retry=events.append)
    with Client(outage.service.url, model="restart", retry=retry) as client:
        client.put_model("restart", {"n_features": N_FEATURES})
        predictions = client.predict_batch(german.rows[:N_LABELS])
        assert all(p.stored for p in predictions)
        results = label_through_a_restart(outage, client.feedback, predictions, german.y[:N_LABELS])
        check_counted_once(client, "restart", results)
    refusals = [e for e in events if isinstance(e.reason, ApiError)]
    assert refusals, "Redis was down and no label was refused: the restart missed the labels"
    for event in refusals:  # each wait honoured the server's Retry-After
        assert isinstance(event.reason, ApiError) and event.reason.status == 503
        assert event.reason.retry_after is not None and event.reason.retry_after >= 1
        assert event.wait == event.reason.retry_after


def test_websocket_labels_are_retried_across_a_redis_restart(outage: Served, german: German) -> None:
    events: list[RetryEvent] = []
    retry = RetryPolicy(attempts=60, backoff=0.1, max_backoff=0.5, deadline=60.0, on_retry=events.append)
    with Client(outage.service.url, model="restart-ws", retry=retry) as client:
        client.put_model("restart-ws", {"n_features": N_FEATURES})
        predictions = client.predict_batch(german.rows[:N_LABELS])
        with client.stream() as stream:
            results = label_through_a_restart(outage, stream.feedback, predictions, german.y[:N_LABELS])
            assert stream.connections == 1
        check_counted_once(client, "restart-ws", results)
    refusals = [e for e in events if isinstance(e.reason, ApiError)]
    assert any(isinstance(e.reason, ApiError) and e.reason.status == 503 for e in refusals)
    for event in refusals:  # the reply's retry_after is REST's Retry-After, and the stream honours it
        assert isinstance(event.reason, ApiError) and event.reason.status == 503
        assert event.reason.retry_after is not None and event.reason.retry_after >= 1
        assert event.wait == event.reason.retry_after
