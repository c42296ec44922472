"""OLI2DS over a real server: named features that appear, vanish and return.

The WDBC rows (standardised, as the OLI2DS code's protocol does) go through ``/predict`` and
``/feedback`` as ``{name: value}`` objects whose present names follow a schedule: new names appear
in waves, some vanish for a while and come back, a few arrive as explicit zeros. The library
(:class:`~service.features.FeatureSpace` and the ``oli2ds`` learner, fed the same examples in the
same order) must score every prediction exactly as the server did, and the server must end in the
same bits after a clean restart (checkpoint) and after ``kill -9`` (checkpoint + log replay).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from model_store import Example
from service.datasets import read_label_last_csv
from service.features import FeatureSpace
from service.model_config import ModelConfig

from ..conftest import dataset_path
from ..support.private_redis import PrivateRedis
from .client import Running, assert_refused, running

CONFIG: dict[str, Any] = {"algorithm": "oli2ds", "max_features": 40}
D = 30


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis) -> Iterator[Running]:
    env = {  # checkpoints only at shutdown, so that a SIGKILL restart replays the log after one
        "ACOG_REDIS_URL": module_redis.url,
        "ACOG_CHECKPOINT_EVERY_SECONDS": "3600",
        "ACOG_MAINTENANCE_INTERVAL_SECONDS": "3600",
    }
    with running(tmp_path_factory.mktemp("oli2ds"), env) as run:
        yield run


@pytest.fixture(scope="module")
def stream() -> list[tuple[dict[str, float], int]]:
    """WDBC rows as named features on a schedule of appearing, vanishing and returning names."""
    from sklearn.preprocessing import scale

    data = read_label_last_csv(dataset_path("oli2ds", "wdbc.csv.xz"))
    X, y = scale(data.X.toarray()), data.y
    rng = np.random.default_rng(7)
    out = []
    for i in range(240):
        wave = min(D, 6 + 3 * (i // 20))  # new names appear every 20 examples
        present = [j for j in range(wave) if rng.random() < 0.7]
        if 60 <= i < 120:  # f0..f4 vanish for 60 examples, then return with their weights
            present = [j for j in present if j >= 5]
        features = {f"f{j}": float(X[i, j]) for j in present}
        if i % 17 == 0:
            features[f"f{wave - 1}"] = 0.0  # an explicit zero: present, with the value 0
        out.append((features or {"f5": 0.5}, int(y[i])))
    return out


class Library:
    """What the server should compute: the same schema and learner, fed in the same order."""

    def __init__(self) -> None:
        config = ModelConfig(**CONFIG)
        self.space = FeatureSpace(config)
        self.learner = config.build_learner()

    def score(self, features: dict[str, float]) -> float:
        return self.learner.score(self.space.parse(features)[1])

    def learn(self, features: dict[str, float], y: int) -> None:
        names = tuple(sorted(features))
        example = Example.named(names, [features[n] for n in names])
        self.learner.learn(self.space.vector(example), y)

    def present(self) -> set[str]:
        return {
            self.space.name_of(int(i)) for i in self.learner.present_features() if i < self.learner.n_features
        }


def feed(run: Running, library: Library, stream: list[tuple[dict[str, float], int]]) -> None:
    for features, y in stream:
        reply = run.api.predict_one("incomplete", features)
        assert reply["score"] == library.score(features)
        assert run.api.label(reply["prediction_id"], y)["applied"] is True
        library.learn(features, y)


def test_named_features_come_and_go_as_in_the_library_and_survive_kill_9(
    server: Running, stream: list[tuple[dict[str, float], int]]
) -> None:
    api = server.api
    created = api.put_model("incomplete", CONFIG)
    assert created["config"]["normalize"] == "none" and created["config"]["C"] == 0.01
    library = Library()
    probe = [features for features, _ in stream[200:240]] + [{"f0": 1.0, "f1": -1.0}, {"never-seen": 2.0}]

    feed(server, library, stream[:100])
    assert library.space.registry is not None
    vanished = [library.space.registry.index_of(f"f{j}") for j in range(5)]
    weights_while_vanished = library.learner.weights()[vanished]
    feed(server, library, stream[100:110])  # still absent: frozen
    assert np.array_equal(library.learner.weights()[vanished], weights_while_vanished)

    feed(server, library, stream[110:160])  # f0..f4 return with the weights they kept
    state = api.state("incomplete")
    assert state["version"] == 160
    assert (
        state["features"]["seen"] == state["features_registered"] == library.learner.seen_features().size - 1
    )  # and the intercept
    shown = {e["name"] for e in state["features"]["informativeness"]}
    assert shown == library.present() and state["features"]["present"] == len(shown)
    before = api.snapshot("incomplete", probe)
    assert before[1] == [library.score(x) for x in probe]

    server.restart()  # SIGTERM: a checkpoint at version 160
    assert api.snapshot("incomplete", probe) == before
    feed(server, library, stream[160:240])
    after = api.snapshot("incomplete", probe)

    server.service.kill()  # SIGKILL: the checkpoint, then the 80 labels since it are replayed
    server.service.start()
    server.api.reconnect()
    assert "model incomplete (generation 1): recovered at version 240 (80 replayed)" in server.service.log()
    assert api.snapshot("incomplete", probe) == after
    assert after[1] == [library.score(x) for x in probe]


def test_oli2ds_configuration_is_checked_by_name(server: Running) -> None:
    api = server.api
    model = api.put_model("knobs", {**CONFIG, "statistics": "welford", "cost_in": "cap", "theta": 4})
    assert (model["config"]["statistics"], model["config"]["C"], model["config"]["theta"]) == (
        "welford",
        0.01,
        4,
    )
    explicit = api.put_model("scaled", {**CONFIG, "normalize": "l2", "C": 0.5})
    assert (explicit["config"]["normalize"], explicit["config"]["C"]) == (
        "l2",
        0.5,
    )  # a choice, not a default
    for body, field, problem in (
        ({**CONFIG, "statistics": "variance"}, "statistics", "Input should be"),
        ({**CONFIG, "B": 2}, "B", "less than or equal to 1"),
        ({"max_features": 4, "theta": 3}, "theta", "is not a parameter of acog"),
        ({**CONFIG, "eta": 3}, "eta", "is not a parameter of oli2ds"),
    ):
        assert_refused(api.http.put("/models/refused", json=body), 422, field, problem)
    api.predict_one("knobs", {"a": 1.0})
    state = api.state("knobs")
    assert state["features"] == {"seen": 0, "present": 0, "informativeness": []}  # nothing labelled yet
