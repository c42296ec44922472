"""ACOG over a feature map on a real server (``feature_map`` in ``PUT /models/{name}``): the library's
scores on the same schedule, the map in ``GET /models/{name}/state``, the same bits after kill -9
and restart; bad maps refused by name, and nothing stored for them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.learners import create, warm_up
from service.model_config import ModelConfig

from ..support.model_state import comparable, unit_vector
from ..support.private_redis import PrivateRedis
from .client import Running, assert_refused, running
from .conftest import N_FEATURES, German

CONFIG = {
    "n_features": N_FEATURES,
    "algorithm": "acog-diag",
    "feature_map": {"kind": "rff", "n_components": 30, "bandwidth": 0.7, "seed": 11},
}
LIBRARY = {  # what the service builds from CONFIG (README: intercept on, unit L2 rows, auto eta and
    # loss, the members combined by the Fixed-Share vote)
    "eta": "auto",
    "loss": "auto",
    "selection": "hedge",
    "rho": "laplace",
    "fit_intercept": True,
    "update": "acog-diag",
    "n_components": 30,
    "bandwidth": 0.7,
    "seed": 11,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis) -> Iterator[Running]:
    env = {  # checkpoints only at shutdown, so that a SIGKILL restart must replay the log
        "ACOG_REDIS_URL": module_redis.url,
        "ACOG_CHECKPOINT_EVERY_SECONDS": "3600",
        "ACOG_MAINTENANCE_INTERVAL_SECONDS": "3600",
    }
    warm_up(["fogd", "quadratic"])  # the server's warm-up compiles acog's: the map's come from the cache
    with running(tmp_path_factory.mktemp("feature-map"), env) as run:
        yield run


def test_acog_over_random_features_serves_the_library_model_and_survives_kill_9(
    server: Running, german: German
) -> None:
    api = server.api
    api.put_model("fm", CONFIG)
    model = api.model("fm")
    assert model["config"]["algorithm"] == "acog-diag"
    assert model["config"]["feature_map"]["seed"] == 11
    library = create("fogd", N_FEATURES, **LIBRARY)

    def stream(start: int, stop: int) -> None:
        for i in range(start, stop):
            row, y = german.rows[i], german.y[i]
            prediction = api.predict_one("fm", row)
            vector = unit_vector(row, N_FEATURES)
            assert prediction["score"] == library.score(vector), i  # bit for bit
            result = api.label(prediction["prediction_id"], y)
            assert result["applied"], result
            library.learn(vector, y)

    stream(0, 50)
    state = api.state("fm")
    assert state["feature_map"] == {"kind": "fogd", "dimension": 30, "update": "acog-diag"}
    scores = api.scores("fm", german.probe)
    assert scores == [library.score(unit_vector(r, N_FEATURES)) for r in german.probe]

    server.service.kill()
    server.service.start()
    server.api.reconnect()
    assert comparable(api.state("fm")) == comparable(state)
    assert api.scores("fm", german.probe) == scores
    stream(50, 60)


def test_nonlinear_members_serve_the_library_ensemble(server: Running, german: German) -> None:
    """``auto_members: "all"`` at d = 24: 20 members, the quadratic ones named in the state."""
    api = server.api
    config = {"n_features": N_FEATURES, "auto_members": "all", "normalize": "l2"}
    api.put_model("all", config)
    library = ModelConfig.model_validate(config).build_learner()
    for i in range(40):
        row, y = german.rows[i], german.y[i]
        prediction = api.predict_one("all", row)
        vector = unit_vector(row, N_FEATURES)
        assert prediction["score"] == library.score(vector), i
        assert api.label(prediction["prediction_id"], y)["applied"]
        library.learn(vector, y)
    members = api.state("all")["eta"]["members"]
    assert len(members) == 20 and {m["algorithm"] for m in members[10:]} == {"quadratic/acog-diag"}
    assert api.scores("all", german.probe) == [
        library.score(unit_vector(r, N_FEATURES)) for r in german.probe
    ]


FM = {"n_features": N_FEATURES}


@pytest.mark.parametrize(
    ("config", "field", "problem"),
    [
        ({**FM, "feature_map": {"kind": "quadratic", "seed": 1}}, "feature_map", "seed does not apply"),
        ({**FM, "feature_map": {"kind": "rff"}, "algorithm": "ssacog"}, "feature_map", "not ssacog"),
        ({**FM, "feature_map": {"kind": "rff", "n_components": 0}}, "n_components", "greater than or equal"),
        ({"n_features": 65, "feature_map": {"kind": "quadratic"}}, "n_features", "d <= 64"),
        ({**FM, "auto_members": "bogus"}, "auto_members", "'all' or 'auto'"),
        ({**FM, "eta": 0.5, "auto_members": "all"}, "auto_members", "not a parameter"),
    ],
)
def test_bad_maps_are_refused_by_name(server: Running, config: dict, field: str, problem: str) -> None:
    response = server.api.http.put("/models/refused", json=config)
    assert_refused(response, 422, field, problem)
    assert server.api.http.get("/models/refused").status_code == 404
