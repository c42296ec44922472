"""Named features: open schemas (``max_features``), closed ones (``feature_names``), restarts.

- An absent name is missing; an explicit 0 is a value, which registers the name when the
  label is applied (and so takes a slot of an open schema).
- The registry survives a restart, clean (SIGTERM: checkpoint) or not (SIGKILL: the log is
  replayed): the same names keep their indices and the probe scores stay bit for bit.
- A closed schema takes a dense list, in ``feature_names`` order.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from service.client import InvalidRequest

from ..support.model_state import refused, snapshot, state
from ..support.private_redis import PrivateRedis
from .client import Running, running
from .conftest import German

EXPLICIT = {"algorithm": "acog", "eta": 10, "loss": "II", "fit_intercept": False}  # one learner: margins
POOL = [f"f{j}" for j in range(12)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis) -> Iterator[Running]:
    env = {  # checkpoints only at shutdown, so that a SIGKILL restart must replay the log
        "ACOG_REDIS_URL": module_redis.url,
        "ACOG_CHECKPOINT_EVERY_SECONDS": "3600",
        "ACOG_MAINTENANCE_INTERVAL_SECONDS": "3600",
    }
    with running(tmp_path_factory.mktemp("named"), env) as run:
        yield run


def teach(run: Running, model: str, examples: list[tuple[dict[str, float], int]]) -> None:
    for features, y in examples:
        reply = run.client.feedback(run.client.predict(features, model=model), y)
        assert reply.applied is True, reply


def test_an_absent_name_is_missing_and_an_explicit_zero_is_a_value(server: Running) -> None:
    client = server.client
    for name in ("with-zero", "without-zero"):
        client.put_model(name, {**EXPLICIT, "max_features": 2})
    # the same example, with and without an explicit 0 for "z": scored alike
    assert client.predict({"a": 1.0, "z": 0.0}, model="with-zero").score == 0.0
    teach(server, "with-zero", [({"a": 1.0, "z": 0.0}, 1)])
    teach(server, "without-zero", [({"a": 1.0}, 1)])
    assert state(client, "with-zero")["features_registered"] == 2  # "z" took the second slot
    assert state(client, "without-zero")["features_registered"] == 1
    for name in ("with-zero", "without-zero"):
        with_z = client.predict({"a": 2.0, "z": 0.0}, model=name)
        assert client.predict({"a": 2.0}, model=name).score == with_z.score

    # "b" can only be registered where the explicit zero did not take its slot
    teach(server, "with-zero", [({"b": 1.0}, 1)])
    teach(server, "without-zero", [({"b": 1.0}, 1)])
    assert state(client, "with-zero")["features_registered"] == 2
    assert state(client, "without-zero")["features_registered"] == 2
    assert client.predict({"b": 1.0}, model="with-zero").score == 0.0
    assert client.predict({"b": 1.0}, model="without-zero").score > 0.0
    # a name never registered weighs nothing, but the example is still learned and counted
    assert state(client, "with-zero")["version"] == 2
    assert state(client, "with-zero")["measures"]["t_p"] == 2

    # more names than max_features in one example: refused, naming the problem
    with pytest.raises(InvalidRequest) as too_many:
        client.predict({"a": 1, "b": 2, "c": 3}, model="with-zero")
    refused(too_many.value, 422, "features", "more than max_features = 2")


def random_examples(
    rng: random.Random, german: German, start: int, count: int
) -> list[tuple[dict[str, float], int]]:
    """German rows as named features: a random subset of the first 12 columns, zeros kept sometimes."""
    out = []
    for i in range(start, start + count):
        row = german.rows[i]
        names = rng.sample(POOL, rng.randint(2, 8))
        features = {n: row[int(n[1:])] for n in names if row[int(n[1:])] != 0.0 or rng.random() < 0.5}
        out.append((features or {names[0]: 1.0}, german.y[i]))
    return out


def test_the_registry_survives_a_restart(server: Running, german: German) -> None:
    client = server.client
    client.put_model("registry", {"max_features": 16})  # the defaults: eta auto, intercept
    rng = random.Random(5)
    probe: list[dict[str, Any]] = [features for features, _ in random_examples(rng, german, 900, 20)]
    probe += [dict(reversed(list(features.items()))) for features in probe[:3]]  # order of names is free
    probe += [{"f0": 1.0, "never-seen": 2.0}, {"never-seen": 1.0}]

    teach(server, "registry", random_examples(rng, german, 0, 60))
    learned, scores = snapshot(client, "registry", probe)
    assert learned["features_registered"] == len(POOL) and len(set(scores)) > 3
    assert scores[20:23] == scores[:3]
    assert state(client, "registry")["checkpoint"]["version"] == 0

    server.restart()  # SIGTERM: a checkpoint at shutdown
    client = server.client
    assert snapshot(client, "registry", probe) == (learned, scores)
    assert state(client, "registry")["checkpoint"]["version"] == 60

    teach(server, "registry", [*random_examples(rng, german, 60, 30), ({"late-name": 1.0, "f3": 2.0}, 1)])
    learned, scores = snapshot(client, "registry", probe)
    assert learned["features_registered"] == len(POOL) + 1 and learned["version"] == 91

    server.service.kill()  # SIGKILL: no checkpoint; the 31 labels since the last one are replayed
    server.service.start()
    assert "model registry (generation 1): recovered at version 91 (31 replayed)" in server.service.log()
    assert snapshot(client, "registry", probe) == (learned, scores)
    # the name registered last still has its weight: it scores unlike a name never seen
    unseen = client.predict({"never-seen": 1.0}, model="registry").score
    assert unseen == scores[-1]
    assert client.predict({"late-name": 1.0}, model="registry").score != unseen


def test_a_closed_schema_takes_a_dense_list_in_its_order(server: Running, german: German) -> None:
    client = server.client
    names = ["x1", "x2", "x3"]
    client.put_model("closed", {**EXPLICIT, "feature_names": names})
    predictions = client.predict_batch([row[:3] for row in german.rows[:50]], model="closed")  # dense lists
    client.feedback_batch(list(zip(predictions, german.y[:50], strict=True)))
    info = client.get_model("closed")
    assert info.config["feature_names"] == names and info.version == 50

    as_list = client.predict([1.0, 2.0, 3.0], model="closed")
    as_names = client.predict({"x3": 3.0, "x1": 1.0, "x2": 2.0}, model="closed")
    assert (as_list.score, as_list.label) == (as_names.score, as_names.label)
    assert as_list.score != 0.0
    assert client.predict([3.0, 2.0, 1.0], model="closed").score != as_list.score
    x1 = client.predict({"x1": 1.0}, model="closed")
    assert client.predict([1.0, 0.0, 0.0], model="closed").score == x1.score
    with pytest.raises(InvalidRequest) as unknown:
        client.predict({"x1": 1.0, "x4": 1.0}, model="closed")
    refused(unknown.value, 422, "features", "unknown feature names 'x4'")
    assert state(client, "closed")["features_registered"] == 3
