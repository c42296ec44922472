"""Every bad input of the issue: a 4xx naming the field and the problem, and no model changed.

The service runs with small limits (a batch of at most 8, a body of at most 4096 bytes).
Before and after each refused request the test reads the state of every model
(``GET /models/{name}``) and the scores of a probe set: they must be identical.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from ..support.private_redis import PrivateRedis
from .client import Api, Running, assert_refused, running
from .conftest import N_FEATURES, German

MAX_BATCH = 8
MAX_BODY = 4096
CONFIG = {"n_features": N_FEATURES}
NAMES = ["a", "b", "c"]
CLOSED = {"feature_names": NAMES, "fit_intercept": False}
ROW = [1.0] * N_FEATURES


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis, german: German
) -> Iterator[Running]:
    env = {
        "ACOG_REDIS_URL": module_redis.url,
        "ACOG_MAX_BATCH": str(MAX_BATCH),
        "ACOG_MAX_BODY_BYTES": str(MAX_BODY),
    }
    with running(tmp_path_factory.mktemp("bad-inputs"), env) as run:
        api = run.api
        api.probe_batch = 4  # 4 probe rows of 24 float64 in JSON stay under the body limit
        api.put_model("bad", CONFIG)
        api.put_model("closed", CLOSED)
        for start in range(0, 40, MAX_BATCH):
            api.learn("bad", german.rows[start : start + MAX_BATCH], german.y[start : start + MAX_BATCH])
            api.learn("closed", [row[:3] for row in german.rows[start : start + MAX_BATCH]],
                      german.y[start : start + MAX_BATCH])  # fmt: skip
        yield run


@dataclass(frozen=True)
class Case:
    id: str
    path: str
    body: Any  # an object sent as JSON, or a str sent as it is (NaN and Infinity are no JSON)
    status: int
    field: str
    problem: str


def dense(value: str, at: int = 5) -> str:
    """A dense row of the ``bad`` model with one entry spelled as given (raw JSON text)."""
    parts = ["0.5"] * N_FEATURES
    parts[at] = value
    return "[" + ", ".join(parts) + "]"


def sparse(indices: list[Any], values: list[Any]) -> dict[str, Any]:
    """A predict body for the ``bad`` model with sparse features."""
    return {"model": "bad", "features": {"indices": indices, "values": values}}


def predict_text(features: str, model: str = "bad") -> str:
    return f'{{"model": "{model}", "features": {features}}}'


def padded(size: int) -> str:
    """A valid predict body of exactly ``size`` bytes (whitespace before its closing brace)."""
    body = json.dumps({"model": "bad", "features": ROW})
    return body[:-1] + " " * (size - len(body)) + "}"


CASES = [
    # wrong length
    Case("short", "/predict", {"model": "bad", "features": ROW[:-1]}, 422, "features", "has length 23"),
    Case("long", "/predict", {"model": "bad", "features": [*ROW, 1.0]}, 422, "features", "has length 25"),
    Case("empty", "/predict", {"model": "bad", "features": []}, 422, "features", "has length 0"),
    Case("short-in-batch", "/predict", {"model": "bad", "instances": [ROW, ROW[:3]]}, 422, "instances[1]",
         "has length 3"),
    Case("closed-too-long", "/predict", {"model": "closed", "features": [1, 2, 3, 4]}, 422, "features",
         "expected 3"),
    # NaN and infinities, as raw JSON text
    Case("nan", "/predict", predict_text(dense("NaN")), 422, "features", "finite"),
    Case("infinity", "/predict", predict_text(dense("Infinity")), 422, "features", "finite"),
    Case("minus-infinity", "/predict", predict_text(dense("-Infinity", 0)), 422, "features", "finite"),
    Case("overflow", "/predict", predict_text(dense("1e999")), 422, "features", "finite"),
    Case("nan-in-batch", "/predict", f'{{"model": "bad", "instances": [{dense("0")}, {dense("NaN")}]}}', 422,
         "instances", "finite"),
    Case("nan-sparse", "/predict", predict_text('{"indices": [1, 2], "values": [1.0, NaN]}'), 422, "features",
         "finite"),
    Case("nan-named", "/predict", predict_text('{"a": 1.0, "b": Infinity}', "closed"), 422, "features",
         "finite"),
    Case("nan-example", "/feedback", f'{{"model": "bad", "features": {dense("NaN")}, "label": 1}}', 422,
         "features", "finite"),
    # unknown model
    Case("unknown-model", "/predict", {"model": "nobody", "features": ROW}, 404, "model",
         "no model named 'nobody'"),
    Case("unknown-model-example", "/feedback", {"model": "nobody", "features": ROW, "label": 1}, 404, "model",
         "no model named 'nobody'"),
    # feature indices
    Case("index-too-big", "/predict", sparse([3, 24], [1, 2]), 422,
         "features", "index 24 is outside [0, 24)"),
    Case("index-huge", "/predict", sparse([2**40], [1]), 422,
         "features", "outside"),
    Case("index-negative", "/predict", sparse([-1], [1]), 422,
         "indices", "greater than or equal to 0"),
    Case("index-repeated", "/predict", sparse([4, 4], [1, 2]), 422,
         "indices", "strictly increasing"),
    Case("index-repeated-unsorted", "/predict",
         sparse([7, 2, 7], [1, 2, 3]), 422, "indices",
         "strictly increasing"),
    Case("index-unsorted", "/predict", sparse([5, 2], [1, 2]), 422,
         "indices", "strictly increasing (sorted, each index once)"),
    Case("index-unsorted-example", "/feedback",
         {"model": "bad", "features": {"indices": [9, 3], "values": [1, 1]}, "label": 1}, 422,
         "indices", "strictly increasing"),
    Case("sparse-lengths", "/predict", sparse([1, 2], [1]), 422,
         "features", "differ in length"),
    # limits
    Case("batch-over-limit", "/predict", {"model": "bad", "instances": [ROW] * (MAX_BATCH + 1)}, 413,
         "instances", f"over the limit of {MAX_BATCH}"),
    Case("labels-over-limit", "/feedback",
         {"items": [{"prediction_id": f"bad:1:1-{i:016x}", "label": 1} for i in range(MAX_BATCH + 1)]}, 413,
         "items", f"over the limit of {MAX_BATCH}"),
    Case("examples-over-limit", "/feedback",
         {"model": "bad", "items": [{"features": ROW, "label": 1}] * (MAX_BATCH + 1)}, 413, "items",
         f"over the limit of {MAX_BATCH}"),
    Case("body-over-limit", "/predict", padded(MAX_BODY + 1), 413, "body", f"larger than {MAX_BODY} bytes"),
    # named features
    Case("closed-unknown-name", "/predict", {"model": "closed", "features": {"a": 1, "zz": 2}}, 422,
         "features", "unknown feature names 'zz'"),
    Case("named-for-dense-model", "/predict", {"model": "bad", "features": {"a": 1}}, 422, "features",
         "list of numbers"),
    # wrong JSON types
    Case("features-string", "/predict", {"model": "bad", "features": "0.5"}, 422, "features",
         "a list of numbers"),
    Case("feature-string", "/predict", {"model": "bad", "features": [*ROW[:-1], "1"]}, 422, "features",
         "valid number"),
    Case("feature-bool", "/predict", {"model": "bad", "features": [True, *ROW[1:]]}, 422, "features",
         "valid number"),
    Case("feature-null", "/predict", {"model": "bad", "features": [None, *ROW[1:]]}, 422, "features",
         "valid number"),
    Case("sparse-value-string", "/predict", sparse([1], ["2"]), 422,
         "values", "valid number"),
    Case("sparse-index-float", "/predict", sparse([1.5], [2]), 422,
         "indices", "valid integer"),
    Case("named-value-string", "/predict", {"model": "closed", "features": {"a": "1"}}, 422, "features",
         "valid number"),
    Case("model-number", "/predict", {"model": 7, "features": ROW}, 422, "model", "valid string"),
    Case("instances-object", "/predict", {"model": "bad", "instances": {"0": ROW}}, 422, "instances",
         "valid list"),
    Case("instances-empty", "/predict", {"model": "bad", "instances": []}, 422, "instances", "at least 1"),
    Case("both-shapes", "/predict", {"model": "bad", "features": ROW, "instances": [ROW]}, 422, "body",
         "exactly one"),
    Case("extra-field", "/predict", {"model": "bad", "features": ROW, "label": 1}, 422, "label", "extra"),
    Case("body-list", "/predict", [ROW], 422, "body", "valid dictionary"),
    Case("not-json", "/predict", '{"model": "bad", "features": [1, 2', 422, "body", "JSON"),
    Case("prediction-id-number", "/feedback", {"prediction_id": 5, "label": 1}, 422, "prediction_id",
         "valid string"),
    Case("example-without-model", "/feedback", {"features": ROW, "label": 1}, 422, "body", "model"),
    Case("example-short", "/feedback", {"model": "bad", "features": ROW[:-1], "label": 1}, 422, "features",
         "has length 23"),
    Case("example-bad-in-batch", "/feedback",
         {"model": "bad", "items": [{"features": ROW, "label": 1}, {"features": ROW[:2], "label": -1}]}, 422,
         "items[1]", "has length 2"),
    Case("example-bad-label", "/feedback", {"model": "bad", "features": ROW, "label": 3}, 422, "label",
         "-1 or +1"),
    Case("label-float", "/feedback", {"model": "bad", "features": ROW, "label": 1.0}, 422, "label",
         "the integer -1 or +1"),
    Case("label-float-negative", "/feedback", {"model": "bad", "features": ROW, "label": -1.0}, 422, "label",
         "got -1.0"),
]  # fmt: skip


def send(api: Api, case: Case) -> httpx.Response:
    if isinstance(case.body, str):
        return api.post_text(case.path, case.body)
    return api.http.post(case.path, json=case.body)


def everything(run: Running, german: German) -> dict[str, Any]:
    """The state of every model and their probe scores."""
    api = run.api
    return {
        "bad": api.snapshot("bad", german.probe),
        "closed": api.snapshot("closed", [dict(zip(NAMES, row[:3], strict=True)) for row in german.probe]),
        "models": api.http.get("/models").json(),
    }


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_input_is_refused_naming_the_field_and_changes_nothing(
    server: Running, german: German, case: Case
) -> None:
    before = everything(server, german)
    assert before["bad"][0]["version"] == 40 and len(set(before["bad"][1])) > 1
    response = send(server.api, case)
    assert_refused(response, case.status, case.field, case.problem)
    assert json.dumps(response.json(), allow_nan=False)  # strict JSON, whatever the input held
    assert everything(server, german) == before


def test_a_body_over_the_limit_is_refused_even_when_chunked(server: Running, german: German) -> None:
    before = everything(server, german)
    body = padded(MAX_BODY + 1).encode()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 512):
            yield body[start : start + 512]

    response = server.api.http.post(
        "/predict", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in response.request.headers
    assert_refused(response, 413, "body", f"larger than {MAX_BODY} bytes")

    # a chunked body under the limit is served
    small = json.dumps({"model": "bad", "features": ROW}).encode()
    response = server.api.http.post(
        "/predict", content=iter([small[:100], small[100:]]), headers={"content-type": "application/json"}
    )
    assert response.status_code == 200, response.text
    assert everything(server, german) == before


def test_limits_are_inclusive(server: Running) -> None:
    """Exactly ``max_batch`` instances are served; exactly ``max_body_bytes`` too."""
    assert len(server.api.predict("bad", [ROW] * MAX_BATCH)) == MAX_BATCH
    body = padded(MAX_BODY)
    assert len(body.encode()) == MAX_BODY
    response = server.api.post_text("/predict", body)
    assert response.status_code == 200, response.text
    server.api.put_model("limits", CONFIG)  # labelled on a model of its own: "bad" must stay as it is
    pairs = [(p["prediction_id"], 1) for p in server.api.predict("limits", [ROW] * MAX_BATCH)]
    assert all(r["applied"] for r in server.api.labels(pairs))


def test_state_comparison_sees_a_change(server: Running, german: German) -> None:
    """The check above is not vacuous: an accepted label does change the snapshot."""
    before = everything(server, german)
    # A label against the model's own prediction is a mistake for the member that predicts
    # (under either loss), so its weights, and the probe scores, must move.
    wrong = -server.api.predict_one("bad", german.rows[900])["label"]
    server.api.learn("bad", german.rows[900:901], [wrong])
    after = everything(server, german)
    assert after["bad"][0] != before["bad"][0] and after["bad"][1] != before["bad"][1]
    server.api.put_model("bad", CONFIG, expect=200, replace=True)
    for start in range(0, 40, MAX_BATCH):
        server.api.learn("bad", german.rows[start : start + MAX_BATCH], german.y[start : start + MAX_BATCH])
    assert everything(server, german)["bad"][1] == before["bad"][1]
