"""The Aggregated Mondrian Forest (``amf``): its maths, its budget, its state, and river's AMF beside it."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from model_store.codec import decode_state, encode_state
from research.reference import steps as reference
from service.datasets import load
from service.learners import InvalidInput, InvalidParameter, create
from service.learners.forest.kernels import PACKS, forest_proba, forest_score, forest_update
from service.learners.forest.learner import AMF, forest_nbytes, node_nbytes
from service.model_config import ModelConfig

from .streams import same_state, sparse_stream

D = 6
small = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)
streams = st.tuples(
    arrays(np.float64, (40, D), elements=small), arrays(np.int64, 40, elements=st.sampled_from([-1, 1]))
)


def forest(**params: object) -> AMF:
    learner = create("amf", n_features=D, **params)
    assert isinstance(learner, AMF)
    return learner


def leaf_path(state: dict, t: int, x: np.ndarray) -> list[int]:
    """The nodes of tree ``t`` from the root to the leaf holding ``x``."""
    path = [0]
    while state["left"][t, path[-1]] >= 0:
        v = path[-1]
        f, thr = state["feature"][t, v], state["threshold"][t, v]
        path.append(int(state["left"][t, v] if x[f] <= thr else state["right"][t, v]))
    return path


@settings(max_examples=25, deadline=None)
@given(streams, st.integers(0, 2**32), st.sampled_from([5, 11, 4096]), st.booleans())
def test_trees_stay_well_formed_boxes_hold_their_points_and_the_budget_holds(
    stream: tuple, seed: int, budget: int, split_pure: bool
) -> None:
    """Every point learned lies in the box of every node on its path; a node's counts are its
    children's sums; the leaves count every label once; no tree passes its budget."""
    X, y = stream
    learner = forest(seed=seed, max_nodes=budget, split_pure=split_pure, n_estimators=3)
    learner.run(X, y)
    s = learner.to_state()
    assert (s["n_nodes"] <= budget).all() and s["parent"].shape[1] <= budget
    for t in range(3):
        n = int(s["n_nodes"][t])
        for x in X:
            for v in leaf_path(s, t, x):
                assert (s["lower"][t, v] <= x).all() and (x <= s["upper"][t, v]).all()
        internal = [v for v in range(n) if s["left"][t, v] >= 0]
        for v in internal:
            children = s["node_counts"][t, s["left"][t, v]] + s["node_counts"][t, s["right"][t, v]]
            assert np.array_equal(children, s["node_counts"][t, v])
            assert s["time"][t, s["left"][t, v]] >= s["time"][t, v]  # children are born after the parent
        assert s["node_counts"][t, 0].sum() == len(y)
        assert np.array_equal(s["node_counts"][t, 0], [np.sum(y == 1), np.sum(y == -1)])


@settings(max_examples=25, deadline=None)
@given(streams, arrays(np.float64, D, elements=small), st.booleans())
def test_the_aggregated_posterior_is_a_probability(stream: tuple, x: np.ndarray, aggregate: bool) -> None:
    X, y = stream
    learner = forest(use_aggregation=aggregate, n_estimators=3)
    learner.run(X, y)
    p, q = forest_proba(learner._st, x)
    assert 0.0 < p < 1.0 and 0.0 < q < 1.0
    assert math.isclose(p + q, 1.0, rel_tol=1e-12)


@settings(max_examples=25, deadline=None)
@given(streams, arrays(np.float64, D, elements=small), st.floats(0.1, 2.0))
def test_one_tree_without_aggregation_predicts_its_leafs_dirichlet_estimate(
    stream: tuple, x: np.ndarray, a: float
) -> None:
    X, y = stream
    learner = forest(n_estimators=1, use_aggregation=False, dirichlet=a, rho=1.0)
    learner.run(X, y)
    s = learner.to_state()
    leaf = leaf_path(s, 0, x)[-1]
    n_pos, n_neg = s["node_counts"][0, leaf]
    expected = (n_pos + a) / (n_pos + n_neg + 2 * a)
    p = 1.0 / (1.0 + math.exp(-learner.score(x)))  # rho = 1: the score is the log-odds
    assert math.isclose(p, expected, rel_tol=1e-9)


@settings(max_examples=25, deadline=None)
@given(stream=streams, intercept=st.booleans())
def test_a_dense_row_scores_and_learns_as_its_sparse_pair(stream: tuple, intercept: bool) -> None:
    """``score`` and ``learn`` of a dense float64 row (one compiled call each) give the bits of the
    general path, fed the same row as a sparse pair; a row with NaN is refused the same way."""
    X, y = stream
    dense, pair = forest(fit_intercept=intercept), forest(fit_intercept=intercept)
    for x, label in zip(X, y.tolist(), strict=True):
        row = np.ascontiguousarray(x)
        nz = np.flatnonzero(row)
        assert dense.score(row) == pair.score((nz, row[nz]))
        assert dense.learn(row, label) == pair.learn((nz, row[nz]), label)
    assert same_state(dense.to_state(), pair.to_state())
    bad = np.ascontiguousarray(X[0])
    bad[1] = np.nan
    for call in (lambda: dense.score(bad), lambda: dense.learn(bad, 1)):
        with pytest.raises(InvalidInput) as refused:
            call()
        assert (refused.value.field, refused.value.problem) == ("x", "contains NaN or inf")
    assert same_state(dense.to_state(), pair.to_state())


@settings(max_examples=25, deadline=None)
@given(streams, st.integers(0, 2**32), st.sampled_from([5, 11, 4096]), st.booleans(), st.booleans())
def test_the_one_pass_round_is_the_score_then_the_update(
    stream: tuple, seed: int, max_nodes: int, aggregate: bool, split_pure: bool
) -> None:
    """A round (``learn``: the driver runs the fused ``forest_step``, which takes the score on the
    walk down) gives the bits of ``forest_score`` then ``forest_update`` called one after the other:
    its score, its loss and every array, splits below the root and full trees included."""
    X, y = stream
    params = dict(seed=seed, max_nodes=max_nodes, use_aggregation=aggregate, split_pure=split_pure)
    fused, pair = forest(**params), forest(**params)
    for x, label in zip(X, y.tolist(), strict=True):
        idx, val = np.flatnonzero(x), x[np.flatnonzero(x)]
        info = fused.learn((idx, val), label)
        pair._reserve(1)
        st_ = pair._st
        s = forest_score(st_, idx, val)
        rho = pair.rho
        loss, updated = forest_update(st_, pair._kernel_params, idx, val, label, s, rho)
        st_.counts[0 if label > 0 else 1] += 1
        assert (info.score, info.loss, info.updated, info.rho) == (s, loss, updated, rho)
    assert same_state(fused.to_state(), pair.to_state())


@pytest.mark.parametrize("how", ["deepcopy", "pickle", "load_state"])
def test_a_copy_learns_on_with_the_same_bits_and_its_own_packed_arrays(how: str) -> None:
    """The node arrays are views of four blocks, which the single calls pass (8 arrays, not 15). A
    copy (deepcopy, pickle, a fresh forest loading the state) has its own blocks, its node arrays
    views of them again, and learns on with the original's bits without touching the original."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, D))
    y = np.where(X[:, 0] + X[:, 1] ** 2 > 1.0, 1, -1).tolist()
    original = forest(seed=3, fit_intercept=True)
    for x, label in zip(X[:200], y[:200], strict=True):
        original.learn(x, label)
    if how == "deepcopy":
        twin = copy.deepcopy(original)
    elif how == "pickle":
        twin = pickle.loads(pickle.dumps(original))
    else:
        twin = forest(seed=3, fit_intercept=True)
        twin.load_state(original.to_state())
    for learner in (original, twin):
        blocks = learner._flat[4:]
        assert len(learner._flat) == 8
        for block, names in zip(blocks, PACKS, strict=True):
            assert all(getattr(learner._st, name).base is block for name in names)
    assert not any(np.shares_memory(a, b) for a in original._flat for b in twin._flat)
    before = original.to_state()
    for x, label in zip(X[200:300], y[200:300], strict=True):
        assert twin.score(x) == original.score(x)
        assert twin.learn(x, label) == original.learn(x, label)
    assert same_state(twin.to_state(), original.to_state())
    for x, label in zip(X[300:], y[300:], strict=True):
        twin.learn(x, label)
    assert not same_state(twin.to_state(), original.to_state())
    assert not same_state(before, original.to_state())


def test_the_arrays_grow_only_when_the_nodes_in_use_need_it() -> None:
    """The room for labels is a counter of labels that surely fit (two nodes a tree each); when it
    runs out the room is counted again from the nodes in use, so the arrays double only when a
    tree could otherwise run out of room: on a real stream their capacity stays within twice the
    nodes in use (a doubling on every exhausted counter reached eight times that here)."""
    data = load("river:phishing")
    X, y = np.asarray(data.X.todense()), data.y
    learner = create("amf", n_features=X.shape[1])
    for x, label in zip(X, y.tolist(), strict=True):
        learner.learn(np.ascontiguousarray(x), label)
    in_use = int(learner.to_state()["n_nodes"].max())
    capacity = learner._arrays["left"].shape[1]
    assert in_use > 64
    assert capacity <= 2 * (in_use + 2)


@pytest.mark.parametrize("rho", [0.25, 1.0, 9.0])
def test_the_decision_is_the_cost_optimal_threshold_on_the_posterior(rho: float) -> None:
    """The trees do not depend on rho: ``score = log(p / q) + log(rho)``, so the sign of the score is
    ``p >= 1 / (1 + rho)`` (``c_n / (c_p + c_n)`` for ``rho = c_p / c_n``)."""
    X, y = sparse_stream(300, D, density=0.7, seed=2)
    neutral, biased = forest(rho=1.0), forest(rho=rho)
    neutral.run(X, y)
    biased.run(X, y)
    assert same_state({k: v for k, v in neutral.to_state().items() if k != "hyper"},
                      {k: v for k, v in biased.to_state().items() if k != "hyper"})  # fmt: skip
    for i in range(20):
        p, q = forest_proba(neutral._st, X[i].toarray().ravel())
        s = biased.score(X[i])
        assert math.isclose(s, math.log(p / q) + math.log(rho), rel_tol=1e-9, abs_tol=1e-12)
        margin = math.log(rho * p / q)
        assert abs(margin) < 1e-12 or (s >= 0) == (p >= 1 / (1 + rho))


def test_a_full_tree_stops_splitting_and_keeps_learning() -> None:
    X, y = sparse_stream(400, D, density=0.7, seed=3)
    learner = forest(max_nodes=7, n_estimators=2)
    learner.run(X[:200], y[:200])
    full = learner.to_state()
    assert (full["n_nodes"] == 7).all() and learner.describe()["forest"]["full_trees"] == 2
    learner.run(X[200:], y[200:])
    later = learner.to_state()
    assert np.array_equal(later["n_nodes"], full["n_nodes"])
    assert np.array_equal(later["left"], full["left"])
    assert np.array_equal(later["threshold"], full["threshold"])
    assert later["node_counts"][:, 0].sum() == 2 * 400  # the root of each tree counted every label
    assert not np.array_equal(later["log_weight"], full["log_weight"])


def test_checkpoint_through_the_codec_then_more_labels_is_bit_exact() -> None:
    """learn N, checkpoint (the codec's bytes), restore, learn M == learn N + M straight: the random
    streams continue from the restored counters."""
    X, y = sparse_stream(500, D, density=0.7, seed=4)
    straight = forest(seed=12)
    scores = straight.run(X, y).scores
    first = forest(seed=12)
    head = first.run(X[:230], y[:230]).scores
    restored = forest(seed=12)
    restored.load_state(decode_state(encode_state(first.to_state())))
    tail = restored.run(X[230:], y[230:]).scores
    assert np.array_equal(np.concatenate([head, tail]), scores)
    assert same_state(restored.to_state(), straight.to_state())
    other_seed = forest(seed=13)
    assert not np.array_equal(other_seed.run(X, y).scores, scores)


def test_the_state_holds_the_nodes_in_use_only_and_refuses_a_broken_tree() -> None:
    X, y = sparse_stream(200, D, density=0.7, seed=5)
    learner = forest(n_estimators=3)
    learner.run(X, y)
    state = learner.to_state()
    used = int(state["n_nodes"].max())
    assert state["lower"].shape == (3, used, D) and state["parent"].shape == (3, used)
    before = learner.to_state()
    for bad in (
        {**state, "left": np.where(state["left"] >= 0, used, -1).astype(np.int32)},
        {**state, "hyper": state["hyper"] * 2},
        {**state, "n_nodes": state["n_nodes"] + 1},
    ):
        with pytest.raises(InvalidInput) as info:
            learner.load_state(bad)
        assert info.value.field == "state"
        assert same_state(learner.to_state(), before)


def test_the_forest_must_fit_the_memory_budget() -> None:
    assert forest_nbytes(64, {"fit_intercept": True}) == 10 * 4096 * node_nbytes(65)
    with pytest.raises(InvalidParameter) as info:
        create("amf", n_features=64, memory_budget=2**20)
    assert info.value.parameter == "max_nodes"
    with pytest.raises(InvalidParameter) as info:
        create("amf", n_features=5000)
    assert info.value.parameter == "n_features"
    small_forest = create("amf", n_features=64, memory_budget=2**20, max_nodes=64)
    assert small_forest.state_nbytes() <= 2**20


def test_the_model_configuration_carries_the_forest_options() -> None:
    options = {"n_estimators": 4, "seed": 9, "max_nodes": 64}
    config = ModelConfig(n_features=D, algorithm="amf", forest=options)
    learner = config.build_learner()
    assert isinstance(learner, AMF)
    assert (learner.params["n_estimators"], learner.params["seed"], learner.params["max_nodes"]) == (4, 9, 64)
    assert learner.params["rho"] == "laplace" and learner.params["fit_intercept"]
    cost = ModelConfig(n_features=D, algorithm="amf", objective="cost", c_p=0.9).build_learner()
    assert cost.params["rho"] == pytest.approx(9.0)  # decide + when P(+|x) >= c_n / (c_p + c_n) = 0.1
    assert ModelConfig(n_features=D, algorithm="acog", forest={"seed": 1}).inapplicable() == ["forest"]
    assert ModelConfig(n_features=D, algorithm="amf", eta=0.5).inapplicable() == ["eta"]


def test_kernels_grow_the_trees_the_readable_reference_grows() -> None:
    """The default rules (pure nodes do not split, aggregation on) against the reference."""
    X, y = sparse_stream(150, 5, density=0.8, seed=6)
    params = {"seed": 3, "n_estimators": 3, "rho": "laplace"}
    fast = create("amf", n_features=5, **params).run(X, y).scores
    slow = reference.run("amf", X.toarray(), y, **params)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    """The area under the ROC curve (the Mann-Whitney statistic, ties halved)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    n_pos = int(np.sum(y == 1))
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * (len(y) - n_pos)))


def test_quality_is_river_amfs_on_a_real_stream() -> None:
    """river's ``forest.AMFClassifier`` and ours, ten trees each, test-then-train on river's phishing
    (1,250 x 9) in three orders: the same accuracy and AUC within a couple of points (the random
    streams differ, so the bits do not)."""
    from river import forest as river_forest  # a dev dependency: its absence fails, never skips

    data = load("river:phishing")
    X, y = np.asarray(data.X.todense()), np.asarray(data.y)
    ours_acc, ours_auc, river_acc, river_auc = [], [], [], []
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(y))
        Xo, yo = X[order], y[order]
        s = create("amf", n_features=X.shape[1], rho=1.0, seed=seed).run(Xo, yo).scores
        ours_acc.append(np.mean(np.where(s >= 0, 1, -1) == yo))
        ours_auc.append(auc(s, yo))
        model = river_forest.AMFClassifier(n_estimators=10, seed=seed)
        p = np.empty(len(yo))
        for i in range(len(yo)):
            x = {j: float(v) for j, v in enumerate(Xo[i])}
            p[i] = model.predict_proba_one(x).get(True, 0.5) if i else 0.5
            model.learn_one(x, bool(yo[i] == 1))
        river_acc.append(np.mean(np.where(p >= 0.5, 1, -1) == yo))
        river_auc.append(auc(p, yo))
    assert np.mean(ours_acc) >= np.mean(river_acc) - 0.02, (ours_acc, river_acc)
    assert np.mean(ours_auc) >= np.mean(river_auc) - 0.02, (ours_auc, river_auc)
