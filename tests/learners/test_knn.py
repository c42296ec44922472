"""The nearest neighbours (``knn``): the kernels against the readable reference, the ring buffer, the
cost-optimal decision, the state and the memory budget."""

from __future__ import annotations

import math

import numpy as np
import pytest

from model_store.codec import decode_state, encode_state
from research.reference import knn as knn_reference
from research.reference import steps as reference
from service.learners import EtaGrid, InvalidInput, InvalidParameter, create
from service.learners.knn import KNN, buffer_nbytes
from service.learners.roster import NEIGHBOURS_MAX_FEATURES
from service.model_config import ModelConfig

from .streams import same_state, sparse_stream

D = 6


def knn(**params: object) -> KNN:
    learner = create("knn", n_features=D, **params)
    assert isinstance(learner, KNN)
    return learner


@pytest.mark.parametrize("weighting", ["uniform", "distance"])
@pytest.mark.parametrize(
    "params",
    [
        {"rho": "laplace"},
        {"rho": 9.0, "k": 3, "window": 50, "fit_intercept": True},
        {"rho": "laplace", "k": 1, "window": 17, "dirichlet": 2.0},
        {"rho": 0.5, "k": 60, "window": 40},  # k beyond the window: every stored example votes
    ],
    ids=["defaults", "cost-intercept-wraps", "k1", "k-over-window"],
)
def test_kernels_equal_the_readable_reference_bit_for_bit(weighting: str, params: dict) -> None:
    X, y = sparse_stream(300, D, density=0.6, seed=3)
    X = X.toarray()
    X[100:140] = X[20:60]  # exact repeats: distance 0, the exact-match vote, ties by age
    params = {**params, "weighting": weighting}
    fast = knn(**params).run(X, y).scores
    slow = reference.run("knn", X, y, **params)
    assert np.array_equal(fast, slow)


def test_a_tie_in_distance_goes_to_the_more_recent_example() -> None:
    for first, second in ((1, -1), (-1, 1)):
        learner = knn(k=1, rho=1.0)
        learner.learn(np.r_[1.0, np.zeros(D - 1)], first)
        learner.learn(np.r_[-1.0, np.zeros(D - 1)], second)
        assert learner.predict(np.zeros(D)) == second


def test_the_window_keeps_the_last_examples_only() -> None:
    learner = knn(k=1, window=3, rho=1.0)
    far, near = np.full(D, 5.0), np.zeros(D)
    learner.learn(near, 1)  # will leave the window
    for _ in range(3):
        learner.learn(far, -1)
    assert learner.predict(near) == -1
    state = learner.to_state()
    assert int(state["seen"][0]) == 4 and state["labels"].tolist() == [-1, -1, -1]
    assert learner.describe() == {"neighbours": {"k": 1, "window": 3, "weighting": "distance", "stored": 3}}


@pytest.mark.parametrize("rho", [9.0, 1.0, 1 / 9])
def test_the_decision_is_the_cost_optimal_threshold_on_the_smoothed_vote(rho: float) -> None:
    """+1 exactly when P(+|x) >= 1 / (1 + rho), P(+|x) = (n_+ + a) / (k + 2 a)."""
    X, y = sparse_stream(200, D, density=0.8, seed=8)
    learner = knn(rho=rho, window=60)
    model = knn_reference.initial_model(D, learner.params)
    for x, label in zip(X.toarray(), y, strict=True):
        p, q = knn_reference.proba(model, x, learner.params)
        assert p + q == pytest.approx(1.0)
        threshold = 1.0 / (1.0 + rho)
        if abs(p - threshold) > 1e-9:  # (never this close with k = 5 and a = 1/2)
            assert (learner.score(x) >= 0.0) == (p >= threshold)
        learner.learn(x, label)
        model = knn_reference.step(model, x, int(label), learner.params, rho)
    fresh = knn(rho="laplace")
    assert fresh.score(np.ones(D)) == 0.0  # an empty buffer: P = 1/2, log rho = 0
    assert knn(rho=9.0).score(np.ones(D)) == pytest.approx(math.log(9.0))


@pytest.mark.parametrize("dirichlet", [0.5, 0.05])
def test_the_prior_floor_decides_a_stream_with_few_positives(dirichlet: float) -> None:
    """Three positives in a hundred, the Laplace threshold near 0.04: P(+|x) is at least
    a / (k + 2 a), 1/12 with the default a = 1/2, so every example is flagged; a = 0.05 puts the
    floor under 1 %, and an example whose neighbours are all negative is normal (docs/learners.md)."""
    rng = np.random.default_rng(3)
    learner = knn(rho="laplace", dirichlet=dirichlet)
    for i in range(100):
        label = 1 if i % 33 == 0 else -1
        learner.learn(rng.normal(size=D) + (4.0 if label > 0 else 0.0), label)
    assert learner.predict(rng.normal(size=D)) == (1 if dirichlet == 0.5 else -1)
    assert learner.predict(rng.normal(size=D) + 4.0) == 1


def test_learning_after_a_checkpoint_gives_the_bits_of_one_straight_run() -> None:
    X, y = sparse_stream(400, D, density=0.6, seed=4)
    params = {"window": 150, "weighting": "distance", "rho": "laplace"}
    straight = knn(**params)
    scores = straight.run(X, y).scores
    first = knn(**params)
    head = first.run(X[:230], y[:230]).scores
    restored = knn(**params)
    restored.load_state(decode_state(encode_state(first.to_state())))
    tail = np.array([restored.learn(X[i], y[i]).score for i in range(230, 400)])
    assert np.array_equal(np.concatenate([head, tail]), scores)
    assert same_state(restored.to_state(), straight.to_state())


def test_load_state_refuses_a_broken_buffer_and_changes_nothing() -> None:
    X, y = sparse_stream(50, D, density=0.6, seed=5)
    learner = knn(window=80)
    learner.run(X, y)
    before = learner.to_state()
    labels = before["labels"].copy()
    labels[60] = 1  # a label in a slot never written
    nan = before["examples"].copy()
    nan[3, 2] = np.nan
    for bad in (
        {**before, "labels": labels},
        {**before, "examples": nan},
        {**before, "seen": np.array([-1])},
        {**before, "hyper": before["hyper"] * 2},
    ):
        with pytest.raises(InvalidInput) as info:
            learner.load_state(bad)
        assert info.value.field == "state"
        assert same_state(learner.to_state(), before)


def test_the_buffer_must_fit_the_memory_budget_and_is_refused_naming_window() -> None:
    assert buffer_nbytes(64, {"fit_intercept": True}) == 1000 * (8 * 65 + 1)
    with pytest.raises(InvalidParameter) as info:
        create("knn", n_features=64, memory_budget=2**18)
    assert info.value.parameter == "window"
    small = create("knn", n_features=64, memory_budget=2**18, window=250)
    assert small.state_nbytes() <= 2**18
    for bad, name in (({"k": 0}, "k"), ({"window": 0}, "window"), ({"weighting": "gauss"}, "weighting")):
        with pytest.raises(InvalidParameter) as info:
            create("knn", n_features=D, **bad)
        assert info.value.parameter == name


def test_the_model_configuration_carries_the_knn_options() -> None:
    config = ModelConfig(n_features=D, algorithm="knn", knn={"k": 7, "window": 300, "weighting": "distance"})
    learner = config.build_learner()
    assert isinstance(learner, KNN)
    params = learner.params
    assert (params["k"], params["window"], params["weighting"]) == (7, 300, "distance")
    assert learner.params["rho"] == "laplace" and learner.params["fit_intercept"]
    cost = ModelConfig(n_features=D, algorithm="knn", objective="cost", c_p=0.9).build_learner()
    assert cost.params["rho"] == pytest.approx(9.0)
    assert ModelConfig(n_features=D, algorithm="acog", knn={"k": 3}).inapplicable() == ["knn"]
    assert ModelConfig(n_features=D, algorithm="knn", eta=0.5).inapplicable() == ["eta"]


def test_the_default_ensemble_runs_knn_over_standardised_input_within_the_bound_and_budget() -> None:
    default = ModelConfig(n_features=D).build_learner()
    assert isinstance(default, EtaGrid)
    pairs = list(zip(default.member_algorithms, default.member_forms, strict=True))
    assert [f for a, f in pairs if a == "knn"] == ["standard"]
    knn_member = default.members[default.member_algorithms.index("knn")]
    assert (knn_member.params["k"], knn_member.params["window"]) == (5, 1000)
    wide = ModelConfig(n_features=NEIGHBOURS_MAX_FEATURES + 1).build_learner()
    assert isinstance(wide, EtaGrid) and "knn" not in wide.member_algorithms
    need = buffer_nbytes(D, {"fit_intercept": True})  # one member, over the standardised input
    assert "knn" in ModelConfig(n_features=D).member_algorithms()
    for budget, joins in ((need - 1, False), (need + 10_000, True)):
        learner = ModelConfig(n_features=D).build_learner(memory_budget=budget)
        assert isinstance(learner, EtaGrid) and ("knn" in learner.member_algorithms) == joins
        assert "amf" not in learner.member_algorithms  # ten full trees need far more
    narrowed = ModelConfig(n_features=D, auto_members="all").build_learner()
    assert isinstance(narrowed, EtaGrid) and "knn" not in narrowed.member_algorithms
