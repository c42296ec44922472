"""An ``amf`` model on a real server: the library's forest on the same schedule, bit for bit, its trees
in ``GET /models/{name}``, the same bits after kill -9 and restart (the random streams continue from
the replayed state), and bad forest options refused by name.

The model uses the cost objective, so the decision is ``P(+|x) >= c_n / (c_p + c_n) = 0.1`` (the
service's rho = c_p / c_n = 9), and a node budget the trees fill within the stream.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.learners import create, warm_up

from ..support.model_state import comparable, unit_vector
from ..support.private_redis import PrivateRedis
from .client import Running, assert_refused, running
from .conftest import N_FEATURES, German

FOREST = {"n_estimators": 4, "max_nodes": 41, "seed": 17}
CONFIG = {"n_features": N_FEATURES, "algorithm": "amf", "objective": "cost", "forest": FOREST}
LIBRARY = {**FOREST, "rho": 9.0, "fit_intercept": True}  # what the service builds (unit L2 rows)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis) -> Iterator[Running]:
    env = {  # checkpoints only at shutdown, so that a SIGKILL restart must replay the log
        "ACOG_REDIS_URL": module_redis.url,
        "ACOG_CHECKPOINT_EVERY_SECONDS": "3600",
        "ACOG_MAINTENANCE_INTERVAL_SECONDS": "3600",
    }
    warm_up(["amf"])  # into the shared disk cache, which the server loads from
    with running(tmp_path_factory.mktemp("forest"), env) as run:
        yield run


def test_amf_serves_the_library_forest_and_survives_kill_9(server: Running, german: German) -> None:
    api = server.api
    model = api.put_model("forest", CONFIG)
    assert model["config"]["algorithm"] == "amf" and model["config"]["forest"]["seed"] == 17
    library = create("amf", N_FEATURES, **LIBRARY)

    def stream(start: int, stop: int) -> None:
        for i in range(start, stop):
            row, y = german.rows[i], german.y[i]
            prediction = api.predict_one("forest", row)
            vector = unit_vector(row, N_FEATURES)
            assert prediction["score"] == library.score(vector), i  # bit for bit
            assert prediction["label"] == (1 if library.score(vector) >= 0 else -1)
            result = api.label(prediction["prediction_id"], y)
            assert result["applied"], result
            library.learn(vector, y)

    stream(0, 80)
    state = api.state("forest")
    assert state["forest"] == library.describe()["forest"]
    assert state["forest"]["full_trees"] == 4  # the budget filled: the trees learn on without splitting
    scores = api.scores("forest", german.probe)
    assert scores == [library.score(unit_vector(r, N_FEATURES)) for r in german.probe]

    server.service.kill()
    server.service.start()
    server.api.reconnect()
    assert "model forest (generation 1): recovered at version 80 (80 replayed)" in server.service.log()
    assert comparable(api.state("forest")) == comparable(state)
    assert api.scores("forest", german.probe) == scores
    stream(80, 100)
    expected = [library.score(unit_vector(r, N_FEATURES)) for r in german.probe]
    assert api.scores("forest", german.probe) == expected


AMF = {"n_features": N_FEATURES, "algorithm": "amf"}


@pytest.mark.parametrize(
    ("config", "field", "problem"),
    [
        ({**AMF, "forest": {"n_estimators": 0}}, "n_estimators", "greater than or equal to 1"),
        ({**AMF, "forest": {"max_nodes": 2}}, "max_nodes", "greater than or equal to 3"),
        ({**AMF, "forest": {"trees": 3}}, "trees", "Extra inputs"),
        ({**AMF, "forest": {"max_nodes": 2**24}}, "max_nodes", "memory budget"),
        ({**AMF, "eta": 0.5}, "eta", "not a parameter of amf"),
        ({"n_features": 4, "algorithm": "acog", "forest": {"seed": 1}}, "forest", "not a parameter of acog"),
        ({"n_features": 2000, "algorithm": "amf"}, "n_features", "d <= 1024"),
    ],
)
def test_bad_forest_options_are_refused_by_name(
    server: Running, config: dict, field: str, problem: str
) -> None:
    response = server.api.http.put("/models/refused", json=config)
    assert_refused(response, 422, field, problem)
    assert server.api.http.get("/models/refused").status_code == 404
