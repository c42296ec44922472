"""No silent drops, on a real server: what the service cannot do with a request, it says.

- a feature name past a model's ``max_features`` is named in the reply (``ignored_features``) and
  counted (``acog_features_ignored_total``), for a prediction and for the label;
- a ``zero_one`` model answers predictions in 0/1, the labels it takes;
- a request without ``model`` is refused when no default model is configured;
- the same prediction id labelled with another value is a 409 conflict (not a duplicate).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..support.private_redis import PrivateRedis
from .client import Running, running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis) -> Iterator[Running]:
    with running(tmp_path_factory.mktemp("drops"), {"ACOG_REDIS_URL": module_redis.url}) as run:
        yield run


def metric(run: Running, name: str, **labels: str) -> float:
    text = run.api.http.get("/metrics").text
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_names_past_max_features_are_reported_and_counted(server: Running) -> None:
    api = server.api
    api.put_model("open", {"max_features": 2, "fit_intercept": False})
    first = api.http.post("/predict", json={"model": "open", "features": {"a": 1.0, "b": 2.0}})
    assert first.status_code == 200 and first.json()["ignored_features"] == []
    learned = api.label(first.json()["prediction_id"], 1)
    assert learned["applied"] and learned["ignored_features"] == []  # a and b take the two slots

    reply = api.http.post("/predict", json={"model": "open", "features": {"c": 3.0, "d": 4.0}})
    assert reply.status_code == 200, reply.text
    assert reply.json()["ignored_features"] == ["c", "d"]
    label = api.label(reply.json()["prediction_id"], -1)
    assert label["applied"] is True and label["ignored_features"] == ["c", "d"]
    assert metric(server, "acog_features_ignored_total", model="open", at="predict") == 2
    assert metric(server, "acog_features_ignored_total", model="open", at="label") == 2

    example = api.http.post("/feedback", json={"model": "open", "features": {"b": 1.0, "e": 1.0}, "label": 1})
    assert example.status_code == 200 and example.json()["ignored_features"] == ["e"]
    assert api.model("open")["state"]["features_registered"] == 2


def test_a_zero_one_model_predicts_zero_or_one(server: Running) -> None:
    api = server.api
    api.put_model("bits", {"n_features": 2, "fit_intercept": False, "label_format": "zero_one"})
    labels = set()
    for features in ([1.0, 0.0], [-1.0, 0.0]):
        for _ in range(3):
            reply = api.predict_one("bits", features)
            labels.add(reply["label"])
            assert api.label(reply["prediction_id"], 1 if features[0] > 0 else 0)["applied"]
    assert labels <= {0, 1} and 0 in labels  # a negative score answers 0, which the model takes
    batch = api.http.post("/predict", json={"model": "bits", "instances": [[-1.0, 0.0], [1.0, 0.0]]})
    assert [p["label"] for p in batch.json()["predictions"]] == [0, 1]


def test_a_request_without_model_is_refused_without_a_default_model(server: Running) -> None:
    response = server.api.http.post("/predict", json={"features": [1.0, 2.0]})
    assert response.status_code == 422, response.text
    detail = response.text
    assert "model" in detail and "ACOG_DEFAULT_MODEL" in detail


def test_a_second_label_with_another_value_is_a_conflict(server: Running) -> None:
    api = server.api
    api.put_model("conflict", {"n_features": 2})
    pid = api.predict_one("conflict", [1.0, 2.0])["prediction_id"]
    first = api.http.post("/feedback", json={"prediction_id": pid, "label": 1})
    again = api.http.post("/feedback", json={"prediction_id": pid, "label": 1})
    changed = api.http.post("/feedback", json={"prediction_id": pid, "label": -1})
    assert first.status_code == 200 and not first.json()["duplicate"]
    assert again.status_code == 200 and again.json()["duplicate"]
    assert changed.status_code == 409, changed.text
    assert "label_conflict" in changed.text or "labelled 1 already" in changed.text
    assert api.model("conflict")["state"]["version"] == 1
