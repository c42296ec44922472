"""Model endpoints and health: create, replace, list, describe, delete, refuse bad configs.

The service starts with ``ACOG_DEFAULT_MODEL`` set, so a model exists before any PUT.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ..support.private_redis import PrivateRedis
from .client import Running, assert_refused, running
from .conftest import N_FEATURES, German

DEFAULT_MODEL = {"n_features": 4, "fit_intercept": False, "label_format": "zero_one"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis) -> Iterator[Running]:
    env = {"ACOG_REDIS_URL": module_redis.url, "ACOG_DEFAULT_MODEL": json.dumps(DEFAULT_MODEL)}
    with running(tmp_path_factory.mktemp("models"), env) as run:
        yield run


def listed(run: Running) -> dict[str, dict[str, Any]]:
    response = run.api.http.get("/models")
    assert response.status_code == 200, response.text
    return {m["name"]: m for m in response.json()["models"]}


def test_health_and_readiness(server: Running) -> None:
    alive = server.api.http.get("/healthz")
    assert alive.status_code == 200 and alive.json()["status"] == "alive"
    ready = server.api.http.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["status"] == "ready" and ready.json()["auth"] == "open"
    assert ready.json()["models"] == len(listed(server))


def test_the_default_model_exists_at_start(server: Running) -> None:
    assert listed(server)["default"]["generation"] == 1
    info = server.api.model("default")
    assert {k: info["config"][k] for k in DEFAULT_MODEL} == DEFAULT_MODEL
    assert info["config"]["algorithm"] == "acog" and info["status"] == "serving"
    # a request that names no model goes to it, and its label format is the configured one
    response = server.api.http.post("/predict", json={"features": [1, 2, 3, 4]})
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "default"
    assert server.api.label(response.json()["prediction_id"], 0)["applied"] is True


def test_put_creates_then_replaces_with_a_new_generation(server: Running, german: German) -> None:
    api = server.api
    config = {"n_features": N_FEATURES, "algorithm": "arow", "r": 0.5}
    created = api.http.put("/models/life", json=config)
    assert created.status_code == 201, created.text
    info = created.json()
    assert info["name"] == "life" and info["generation"] == 1 and info["status"] == "serving"
    assert info["config"]["algorithm"] == "arow" and info["config"]["r"] == 0.5
    assert info["state"]["version"] == 0

    api.learn("life", german.rows[:30], german.y[:30])
    info = api.model("life")
    measures = info["state"]["measures"]
    assert info["state"]["version"] == 30 and measures["t_p"] + measures["t_n"] == 30
    assert {"sensitivity", "specificity", "weighted_sum", "weighted_cost", "m_p", "m_n"} <= set(measures)
    assert isinstance(info["state"]["updates"], int) and 0 < info["state"]["updates"] <= 30
    assert listed(server)["life"] == {
        "name": "life", "generation": 1, "algorithm": "arow", "version": 30, "status": "serving"
    }  # fmt: skip
    scores = api.scores("life", german.probe)

    same = api.http.put("/models/life", json=config)  # a deploy script run twice: nothing changes
    assert same.status_code == 200, same.text
    assert same.json()["generation"] == 1 and same.json()["state"]["version"] == 30
    assert api.scores("life", german.probe) == scores
    other = api.http.put("/models/life", json={**config, "r": 0.25})  # another configuration needs intent
    assert_refused(other, 409, "name", "with another configuration; PUT with ?replace=true")
    assert other.json()["detail"][0]["type"] == "model_conflict"
    assert api.model("life")["generation"] == 1 and api.scores("life", german.probe) == scores

    replaced = api.http.put("/models/life", json=config, params={"replace": "true"})
    assert replaced.status_code == 200, replaced.text
    info = replaced.json()
    assert info["generation"] == 2 and info["state"]["version"] == 0
    assert info["state"]["measures"]["t_p"] == info["state"]["measures"]["t_n"] == 0
    assert api.scores("life", german.probe) == [0.0] * len(german.probe) != scores
    assert listed(server)["life"]["generation"] == 2

    api.delete_model("life")
    assert "life" not in listed(server)
    assert_refused(api.http.get("/models/life"), 404, "name", "no model named 'life'")
    assert_refused(api.http.delete("/models/life"), 404, "name", "no model named 'life'")
    response = api.http.post("/predict", json={"model": "life", "features": german.rows[0]})
    assert_refused(response, 404, "model", "no model named 'life'")
    # a name can be used again after a delete: a model learning from scratch
    again = api.put_model("life", config)
    assert again["state"]["version"] == 0 and again["generation"] > 2


@pytest.mark.parametrize(
    ("n_features", "algorithm"), [(N_FEATURES, "acog"), (20_000, "ssacog")], ids=["small", "large"]
)
def test_the_resolved_algorithm_is_shown(server: Running, n_features: int, algorithm: str) -> None:
    info = server.api.put_model(f"resolved-{algorithm}", {"n_features": n_features})
    assert info["config"]["algorithm"] == algorithm
    assert server.api.model(f"resolved-{algorithm}")["config"]["algorithm"] == algorithm
    assert listed(server)[f"resolved-{algorithm}"]["algorithm"] == algorithm


INVALID: list[tuple[str, Any, str, str]] = [  # (id, config, a loc part, a word of the message)
    ("eta-zero", {"n_features": 3, "eta": 0}, "eta", "greater than 0"),
    ("eta-negative", {"n_features": 3, "eta": -1.5}, "eta", "greater than 0"),
    ("eta-word", {"n_features": 3, "eta": "fast"}, "eta", "auto"),
    ("eta-for-perceptron", {"n_features": 3, "algorithm": "perceptron", "eta": 1.0}, "eta",
     "not a parameter of perceptron"),
    ("both-schemas", {"n_features": 3, "feature_names": ["a", "b", "c"]}, "body",
     "either n_features or feature_names"),
    ("no-schema", {"algorithm": "acog"}, "body", "feature schema is required"),
    ("n-features-zero", {"n_features": 0}, "n_features", "greater than or equal to 1"),
    ("n-features-over-limit", {"n_features": 10**9}, "n_features", "over the limit"),
    ("unknown-algorithm", {"n_features": 3, "algorithm": "svm"}, "algorithm", "acog"),
    ("unknown-field", {"n_features": 3, "learning_rate": 1}, "learning_rate", "extra"),
    ("repeated-names", {"feature_names": ["a", "a"]}, "body", "distinct"),
    ("alpha-out-of-range", {"n_features": 3, "alpha_p": 1.0}, "alpha_p", "less than 1"),
    ("label-format", {"n_features": 3, "label_format": "bits"}, "label_format", "zero_one"),
    ("not-an-object", [3], "body", "valid dictionary"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("config", "field", "problem"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_an_invalid_config_is_422_naming_the_field(
    server: Running, config: Any, field: str, problem: str
) -> None:
    before = listed(server)
    response = server.api.http.put("/models/invalid", json=config)
    assert_refused(response, 422, field, problem)
    assert listed(server) == before
    assert server.api.http.get("/models/invalid").status_code == 404


def test_an_invalid_config_does_not_touch_the_model_it_would_replace(server: Running, german: German) -> None:
    api = server.api
    api.put_model("kept", {"n_features": N_FEATURES})
    api.learn("kept", german.rows[:20], german.y[:20])
    before = api.snapshot("kept", german.probe)
    assert_refused(
        api.http.put("/models/kept", json={"n_features": N_FEATURES, "eta": -1}), 422, "eta", "greater"
    )
    assert api.snapshot("kept", german.probe) == before


@pytest.mark.parametrize("name", ["-leading-dash", "a" * 65, "sp ace", "üml"])
def test_an_invalid_model_name_is_422(server: Running, name: str) -> None:
    response = server.api.http.put(f"/models/{name}", json={"n_features": 3})
    assert_refused(response, 422, "name", "pattern" if len(name) <= 64 else "at most 64")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_number_in_a_config_is_422_not_500(server: Running, value: str) -> None:
    body = f'{{"n_features": 3, "eta": {value}, "c_p": {value}}}'
    response = server.api.http.put(
        "/models/non-finite", content=body, headers={"content-type": "application/json"}
    )
    assert_refused(response, 422, "eta", "finite")
    assert_refused(response, 422, "c_p", "finite")
    assert server.api.http.get("/models/non-finite").status_code == 404


def test_a_replace_with_if_generation_is_safe_to_retry(server: Running) -> None:
    """Sent twice (its first answer lost, say), a replace makes one generation, which both answers
    name; a replace meant for a generation that is gone, with another configuration, is a 409."""
    api = server.api
    api.put_model("retried", {"n_features": N_FEATURES})
    other = {"n_features": N_FEATURES, "eta": 3}
    answers = [api.http.put("/models/retried?replace=true&if_generation=1", json=other) for _ in range(2)]
    assert [(a.status_code, a.json()["generation"]) for a in answers] == [(200, 2), (200, 2)]
    third = {"n_features": N_FEATURES, "eta": 5}
    assert_refused(
        api.http.put("/models/retried?replace=true&if_generation=1", json=third),
        409,
        "if_generation",
        "generation 2",
    )
    assert api.model("retried")["generation"] == 2
