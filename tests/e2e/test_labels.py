"""Labels over HTTP: duplicates, unknown and expired ids, replaced and deleted models, label values.

A refused label changes nothing: the model's state and its probe scores are the same before
and after, and the prediction can still be labelled properly afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from ..support.private_redis import PrivateRedis
from .client import Running, assert_refused, running_all
from .conftest import N_FEATURES, German

CONFIG = {"n_features": N_FEATURES, "algorithm": "acog", "eta": 10, "fit_intercept": False}
TTL_SECONDS = 1.0


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis) -> Iterator[list[Running]]:
    """A service with the default label window, and one whose window is one second (on
    database 1 of the module's redis-server), started together."""
    short = {
        "ACOG_REDIS_URL": module_redis.url.removesuffix("/0") + "/1",
        "ACOG_LABEL_TTL_SECONDS": str(TTL_SECONDS),
        "ACOG_MAINTENANCE_INTERVAL_SECONDS": "0.2",  # sweeps expired predictions while the test waits
    }
    specs = [
        (tmp_path_factory.mktemp("labels"), {"ACOG_REDIS_URL": module_redis.url}),
        (tmp_path_factory.mktemp("short-window"), short),
    ]
    with running_all(specs) as runs:
        yield runs


@pytest.fixture
def server(servers: list[Running]) -> Running:
    return servers[0]


@pytest.fixture
def short_window(servers: list[Running]) -> Running:
    return servers[1]


def trained(run: Running, german: German, name: str, config: dict[str, Any] | None = None) -> None:
    """A model that has learned 40 labels, so that its probe scores are not all zero."""
    run.api.put_model(name, config or CONFIG)
    run.api.learn(name, german.rows[:40], german.y[:40])


def test_a_prediction_labelled_twice_counts_once_and_a_retry_answers_the_first_outcome(
    server: Running, german: German
) -> None:
    api = server.api
    trained(server, german, "dup")
    a, b, c = api.predict("dup", german.rows[100:103])
    first = api.label(a["prediction_id"], 1)
    assert first["applied"] and not first["duplicate"] and first["model_version"] == 41
    state, scores = api.snapshot("dup", german.probe)

    again = api.label(a["prediction_id"], 1)  # a retry: the first outcome again, counted once
    assert again["duplicate"] is True and again["applied"] is True and again["status"] == 200
    for key in ("model_version", "updated", "delay_seconds"):
        assert again[key] == first[key], key

    changed = api.http.post("/feedback", json={"prediction_id": a["prediction_id"], "label": -1})
    assert_refused(changed, 409, "label", "was labelled 1 already")  # a label cannot change
    assert changed.json()["detail"][0]["type"] == "label_conflict"
    after = api.state("dup")
    assert after["version"] == 41
    assert after["measures"]["t_p"] + after["measures"]["t_n"] == 41
    assert api.snapshot("dup", german.probe) == (state, scores)

    # within one batch: the first occurrence is applied, the second repeats its outcome, a third
    # with another value is a conflict of its own
    results = api.labels(
        [
            (b["prediction_id"], -1),
            (b["prediction_id"], -1),
            (c["prediction_id"], 1),
            (c["prediction_id"], -1),
        ]
    )
    assert [(r["applied"], r["duplicate"]) for r in results] == [
        (True, False),
        (True, True),
        (True, False),
        (False, False),
    ]
    assert [r["status"] for r in results] == [200, 200, 200, 409]
    assert results[1]["model_version"] == results[0]["model_version"] == 42
    after = api.state("dup")
    assert after["version"] == 43 and after["measures"]["t_p"] + after["measures"]["t_n"] == 43


def test_an_unknown_id_is_404_naming_it(server: Running, german: German) -> None:
    api = server.api
    trained(server, german, "unknown")
    before = api.snapshot("unknown", german.probe)
    real = api.predict_one("unknown", german.rows[200])["prediction_id"]
    forged = real[:-16] + ("0" * 16 if not real.endswith("0" * 16) else "1" * 16)
    for pid, problem in [
        (forged, f"{forged!r} is unknown"),  # well-formed, issued now, never stored
        ("not-an-id", "'not-an-id' is not a prediction id"),
        ("unknown:1:0-0123456789abcdef0", "is not a prediction id"),
    ]:
        response = api.http.post("/feedback", json={"prediction_id": pid, "label": 1})
        assert_refused(response, 404, "prediction_id", problem)
        assert response.json()["detail"][0]["type"] == "unknown"

    # in a batch, the unknown id gets its own 404 and the others are applied
    results = api.labels([(forged, 1), (real, -1)])
    assert results[0]["status"] == 404 and not results[0]["applied"] and "unknown" in results[0]["error"]
    assert forged in results[0]["error"]
    assert results[1]["status"] == 200 and results[1]["applied"]
    assert api.state("unknown")["version"] == before[0]["version"] + 1


def test_an_expired_id_is_404_saying_expired(short_window: Running, german: German) -> None:
    api = short_window.api
    trained(short_window, german, "expiry")
    late, in_time = api.predict("expiry", german.rows[300:302])
    assert api.label(in_time["prediction_id"], 1)["applied"]
    before = api.snapshot("expiry", german.probe)
    time.sleep(TTL_SECONDS + 0.6)
    response = api.http.post("/feedback", json={"prediction_id": late["prediction_id"], "label": 1})
    assert_refused(response, 404, "prediction_id", "expired")
    assert response.json()["detail"][0]["type"] == "expired"
    assert late["prediction_id"] in response.json()["detail"][0]["msg"]
    # the label that came in time counts once, even after the window
    assert api.label(in_time["prediction_id"], 1)["duplicate"] is True
    assert api.snapshot("expiry", german.probe) == before


def test_a_label_for_a_replaced_or_deleted_model_is_410(server: Running, german: German) -> None:
    api = server.api
    trained(server, german, "gone")
    old = api.predict_one("gone", german.rows[400])["prediction_id"]
    replaced = api.put_model("gone", CONFIG, expect=200, replace=True)
    assert replaced["generation"] == 2 and replaced["state"]["version"] == 0
    response = api.http.post("/feedback", json={"prediction_id": old, "label": 1})
    assert_refused(response, 410, "prediction_id", "replaced")
    assert api.state("gone")["version"] == 0

    new = api.predict_one("gone", german.rows[401])["prediction_id"]
    api.delete_model("gone")
    for pid in (old, new):
        response = api.http.post("/feedback", json={"prediction_id": pid, "label": 1})
        assert_refused(response, 410, "prediction_id", "deleted")


def test_an_id_for_a_model_that_never_existed_is_404_unknown(server: Running, german: German) -> None:
    api = server.api
    trained(server, german, "real")
    real = api.predict_one("real", german.rows[0])["prediction_id"]
    ghost = "never-created" + real.removeprefix("real")  # well-formed, issued now, by no model
    response = api.http.post("/feedback", json={"prediction_id": ghost, "label": 1})
    assert_refused(response, 404, "prediction_id", "unknown")


def test_an_id_from_a_generation_never_issued_is_404_unknown(server: Running, german: German) -> None:
    api = server.api
    info = api.put_model("future", CONFIG)
    real = api.predict_one("future", german.rows[0])["prediction_id"]
    forged = real.replace(f"future:{info['generation']}:", f"future:{info['generation'] + 6}:", 1)
    response = api.http.post("/feedback", json={"prediction_id": forged, "label": 1})
    assert_refused(response, 404, "prediction_id", "unknown")


@pytest.mark.parametrize("label", [-1, 1])
def test_minus_one_and_plus_one_are_accepted(server: Running, german: German, label: int) -> None:
    api = server.api
    name = f"pm-{label!r}".replace(".", "-")
    api.put_model(name, CONFIG)
    reply = api.label(api.predict_one(name, german.rows[0])["prediction_id"], label)
    assert reply["applied"] is True and reply["model_version"] == 1
    measures = api.state(name)["measures"]
    assert (measures["t_p"], measures["t_n"]) == ((1, 0) if label > 0 else (0, 1))


REFUSED_PLUS_MINUS: list[Any] = [0, 2, -2, 0.5, 1.0, -1.0, "1", "+1", True, False, None, [1], {"y": 1}]
REFUSED_ZERO_ONE: list[Any] = [-1, 2, 0.5, 1.0, 0.0, "0", True, None]


@pytest.mark.parametrize(
    ("label_format", "accepted", "refused"),
    [("plus_minus_one", [1, -1], REFUSED_PLUS_MINUS), ("zero_one", [1, 0], REFUSED_ZERO_ONE)],
)
def test_a_refused_label_changes_nothing(
    server: Running, german: German, label_format: str, accepted: list[int], refused: list[Any]
) -> None:
    api = server.api
    name = f"labels-{label_format.replace('_', '-')}"
    trained_config = {**CONFIG, "label_format": label_format}
    api.put_model(name, trained_config)
    predictions = api.predict(name, german.rows[:40])
    api.labels([(p["prediction_id"], accepted[0] if y == 1 else accepted[1])
                for p, y in zip(predictions, german.y[:40], strict=True)])  # fmt: skip
    state = api.state(name)
    assert (state["measures"]["t_p"], state["measures"]["t_n"]) == (
        sum(y == 1 for y in german.y[:40]),
        sum(y == -1 for y in german.y[:40]),
    )
    before = api.snapshot(name, german.probe)
    pending = api.predict(name, german.rows[500:502])
    for bad in refused:
        single = api.http.post("/feedback", json={"prediction_id": pending[0]["prediction_id"], "label": bad})
        if bad is None:
            assert_refused(single, 422, "body", "label")
        else:
            assert_refused(single, 422, "label", "")
            if isinstance(bad, int | float) and not isinstance(bad, bool):
                expected = "0 or 1" if label_format == "zero_one" else "-1 or +1"
                assert_refused(single, 422, "label", expected)
        # in a batch, one bad label refuses the whole request: the good one is not applied either
        batch = api.http.post(
            "/feedback",
            json={"items": [{"prediction_id": pending[1]["prediction_id"], "label": accepted[0]},
                            {"prediction_id": pending[0]["prediction_id"], "label": bad}]},
        )  # fmt: skip
        assert_refused(batch, 422, "label", "")
    assert api.snapshot(name, german.probe) == before
    # the refused labels consumed nothing: both predictions can still be labelled
    for p, label in zip(pending, accepted, strict=True):
        assert api.label(p["prediction_id"], label)["applied"] is True
    assert api.state(name)["version"] == before[0]["version"] + 2
