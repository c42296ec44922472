"""Operator signals of the running service: bounded series, status codes, store and model gauges.

A real service process on a Redis server of the module's own (so that the store can be stopped
and started again); every figure is read from its ``/metrics``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess

D = 6
MODEL = "m"
FEATURES = [0.5, -1.0, 0.25, 2.0, 0.0, 1.0]
UNKNOWN_REQUESTS = 1_000


@dataclass
class Stack:
    redis: PrivateRedis
    service: ServiceProcess
    http: httpx.Client


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    directory = tmp_path_factory.mktemp("operator-metrics")
    server = PrivateRedis(directory)
    server.start()
    service = ServiceProcess(directory, {"ACOG_REDIS_URL": server.url, "ACOG_REDIS_TIMEOUT_SECONDS": "1"})
    service.start()
    http = httpx.Client(base_url=service.url, timeout=30)
    assert http.put(f"/models/{MODEL}", json={"n_features": D}).status_code == 201
    yield Stack(server, service, http)
    http.close()
    service.kill()
    server.close()


def scrape(stack: Stack) -> str:
    response = stack.http.get("/metrics")
    assert response.status_code == 200
    return response.text


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float:
    """The sample's value; 0 for a counter series that does not exist yet."""
    return samples(text).get((name, frozenset(labels.items())), 0.0)


def requests(text: str, route: str, method: str, code: int) -> float:
    return value(text, "acog_http_requests_total", route=route, method=method, code=str(code))


def unknown_model_traffic(http: httpx.Client, i: int) -> None:
    """One request naming the model ``card{i}``, which does not exist, in turn through every route
    that takes a model name: GET /models/{name} (also with a trailing slash), /predict, /feedback."""
    name = f"card{i}"
    kind = i % 5
    if kind == 0:
        assert http.get(f"/models/{name}").status_code == 404
    elif kind == 1:
        assert http.get(f"/models/{name}/").status_code == 307  # FastAPI's trailing-slash redirect
    elif kind == 2:
        assert http.post("/predict", json={"model": name, "features": FEATURES}).status_code == 404
    elif kind == 3:
        pid = f"{name}:1:{int(time.time() * 1000):x}-{i:016x}"
        assert http.post("/feedback", json={"prediction_id": pid, "label": 1}).status_code == 404
    else:
        body = {"model": name, "features": FEATURES, "label": 1}
        assert http.post("/feedback", json=body).status_code == 404


def test_unknown_model_names_add_no_series(stack: Stack) -> None:
    for i in range(5):  # every kind once, so that its status-code and _unknown series exist
        unknown_model_traffic(stack.http, i)
    scrape(stack)  # a scrape is counted once answered: the next one shows its series
    before = scrape(stack)
    for i in range(5, 5 + UNKNOWN_REQUESTS):
        unknown_model_traffic(stack.http, i)
    after = scrape(stack)
    assert len(after.splitlines()) == len(before.splitlines()), set(after.splitlines()) ^ set(
        before.splitlines()
    )
    assert "card" not in after
    timed = value(after, "acog_request_duration_seconds_count", model="_unknown", route="/predict")
    assert (
        timed
        == value(before, "acog_request_duration_seconds_count", model="_unknown", route="/predict") + 200
    )
    assert requests(after, "_unmatched", "GET", 307) - requests(before, "_unmatched", "GET", 307) == 200
    assert requests(after, "/feedback", "POST", 404) - requests(before, "/feedback", "POST", 404) == 400


def test_a_4xx_moves_its_status_code_counter_and_a_known_model_keeps_its_label(stack: Stack) -> None:
    before = scrape(stack)
    assert stack.http.get("/models/absent").status_code == 404
    bad = stack.http.post("/predict", json={"model": MODEL, "features": FEATURES[:2]})
    assert bad.status_code == 422
    assert stack.http.post("/predict", json={"model": MODEL, "features": FEATURES}).status_code == 200
    after = scrape(stack)
    assert requests(after, "/models/{name}", "GET", 404) - requests(before, "/models/{name}", "GET", 404) == 1
    assert requests(after, "/predict", "POST", 422) - requests(before, "/predict", "POST", 422) == 1
    assert requests(after, "/predict", "POST", 200) - requests(before, "/predict", "POST", 200) == 1
    assert value(after, "acog_request_duration_seconds_count", model=MODEL, route="/predict") == (
        value(before, "acog_request_duration_seconds_count", model=MODEL, route="/predict") + 2
    )


def test_a_refused_prediction_is_not_a_refused_label(stack: Stack) -> None:
    before = scrape(stack)
    bad = stack.http.post("/predict", json={"model": MODEL, "features": FEATURES[:2]})
    assert bad.status_code == 422
    after = scrape(stack)
    rejected = {"model": MODEL, "reason": "invalid_features"}
    assert value(after, "acog_predictions_rejected_total", **rejected) == (
        value(before, "acog_predictions_rejected_total", **rejected) + 1
    )
    labels_rejected = [
        (key, v) for key, v in samples(after).items() if key[0] == "acog_labels_rejected_total"
    ]
    assert labels_rejected == [
        (key, v) for key, v in samples(before).items() if key[0] == "acog_labels_rejected_total"
    ]


def test_a_refused_labelled_example_is_not_a_refused_prediction(stack: Stack) -> None:
    """``POST /feedback`` with ``features`` (an example never scored): its refusals are labels'."""
    before = scrape(stack)
    body = {"model": MODEL, "features": FEATURES[:2], "label": 1}
    assert stack.http.post("/feedback", json=body).status_code == 422
    assert stack.http.post("/feedback", json={**body, "features": FEATURES, "label": 5}).status_code == 422
    after = scrape(stack)
    for reason in ("invalid_features", "invalid_label"):
        labels = {"model": MODEL, "reason": reason}
        assert value(after, "acog_labels_rejected_total", **labels) == (
            value(before, "acog_labels_rejected_total", **labels) + 1
        )
    predictions = {"model": MODEL, "reason": "invalid_features"}
    assert value(after, "acog_predictions_rejected_total", **predictions) == value(
        before, "acog_predictions_rejected_total", **predictions
    )


def test_process_and_python_collectors_in_single_process_mode(stack: Stack) -> None:
    text = scrape(stack)
    assert value(text, "process_resident_memory_bytes") > 0
    assert value(text, "process_cpu_seconds_total") > 0
    assert any(name == "python_info" for name, _ in samples(text))


def test_models_by_status(stack: Stack) -> None:
    text = scrape(stack)
    assert value(text, "acog_models", status="serving") == 1
    for status in ("recovering", "failed", "stopped"):
        assert ("acog_models", frozenset({("status", status)})) in samples(text), status
        assert value(text, "acog_models", status=status) == 0


def test_store_down_a_503_on_feedback_then_the_store_back(stack: Stack) -> None:
    prediction = stack.http.post("/predict", json={"model": MODEL, "features": FEATURES}).json()
    healthy = scrape(stack)
    assert value(healthy, "acog_store_up") == 1 and value(healthy, "acog_ready") == 1
    assert 0 < value(healthy, "acog_store_probe_seconds") < 1

    stack.redis.stop()
    try:
        refused = stack.http.post(
            "/feedback", json={"prediction_id": prediction["prediction_id"], "label": 1}
        )
        assert refused.status_code == 503
        down = scrape(stack)
        assert value(down, "acog_store_up") == 0 and value(down, "acog_ready") == 0
        assert requests(down, "/feedback", "POST", 503) - requests(healthy, "/feedback", "POST", 503) == 1
        assert value(down, "acog_models", status="serving") == 1  # the model still answers predictions
    finally:
        stack.redis.start()
    deadline = time.monotonic() + 15
    while value(scrape(stack), "acog_ready") != 1:
        assert time.monotonic() < deadline, "the service did not reconnect"
        time.sleep(0.2)
    assert value(scrape(stack), "acog_store_up") == 1


def test_a_failed_model_is_counted_and_keeps_its_label(stack: Stack, tmp_path: Path) -> None:
    """A stored configuration this version cannot load: the model is held as failed at start."""
    assert stack.http.put("/models/broken", json={"n_features": D}).status_code == 201
    stack.service.stop()
    client = redis.Redis.from_url(stack.redis.url)
    client.hset("acog:{broken}:model", "config", '{"n_features": -1}')
    client.close()
    stack.service.start()
    text = scrape(stack)
    assert value(text, "acog_models", status="failed") == 1
    assert value(text, "acog_models", status="serving") == 1
    assert stack.http.get("/models/broken").status_code == 200
    assert stack.http.post("/predict", json={"model": "broken", "features": FEATURES}).status_code == 503
    text = scrape(stack)
    assert value(text, "acog_request_duration_seconds_count", model="broken", route="/predict") == 1
    assert requests(text, "/predict", "POST", 503) == 1
    assert stack.http.delete("/models/broken").status_code == 204  # the other tests see none failed
    assert value(scrape(stack), "acog_models", status="failed") == 0
