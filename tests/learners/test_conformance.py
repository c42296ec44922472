"""The contract every learner keeps (river's ``checks`` idea: one suite, every estimator).

Each contract test runs over :data:`~tests.learners.streams.CASES`: every registered algorithm
and, for each algorithm with a learning rate and a loss, the three forms of the default learner
(``eta="auto"``, ``loss="auto"``, both).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

from service.learners import (
    ALGORITHMS,
    EtaGrid,
    InvalidInput,
    InvalidParameter,
    Learner,
    StateBorrowed,
    create,
)
from service.learners.hedge import THRESHOLDS as HEDGE_THRESHOLDS
from service.learners.inputs import canonical
from service.model_config import ModelConfig

from .streams import CASES, ENSEMBLE_FORMS, NAMES, Case, arrays_of, same_state, sparse_stream

D = 9
cases = pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])


@pytest.fixture(scope="module")
def stream() -> tuple[sp.csr_matrix, np.ndarray]:
    return sparse_stream(160, D, density=0.5, seed=11)


def test_the_suite_covers_every_algorithm_and_every_ensemble_form() -> None:
    assert {c.algorithm for c in CASES} == set(ALGORITHMS)
    with_rate = [n for n in NAMES if {"eta", "loss"} <= set(ALGORITHMS[n].param_spec())]
    assert {"acog", "acog-diag", "cog", "sacog", "ssacog"} <= set(with_rate)  # a learner added: no edit here
    forms = {(c.algorithm, c.form) for c in CASES if c.form}
    assert forms == {(n, f) for n in with_rate for f in ENSEMBLE_FORMS}
    assert all(isinstance(c.create(D), EtaGrid) for c in CASES if c.form)


@cases
def test_run_equals_learn_row_by_row_bit_for_bit_state_included(case: Case, stream: tuple) -> None:
    X, y = stream
    batch = case.create(D)
    first, second = batch.run(X[:70], y[:70]), batch.run(X[70:], y[70:])
    one = case.create(D)
    scores = np.array([one.learn(X[i], y[i]).score for i in range(X.shape[0])])
    assert np.array_equal(np.concatenate([first.scores, second.scores]), scores)
    assert same_state(batch.to_state(), one.to_state())


def same_present_set(row: sp.csr_matrix, presence: bool) -> sp.csr_matrix:
    """``row`` as the sparse form of its dense vector: for a learner that reads presence, a dense
    vector has every feature present, so the sparse form stores its zeros explicitly."""
    if not presence:
        return row
    dense = row.toarray().ravel()
    return sp.csr_matrix((dense, np.arange(D), np.array([0, D])), shape=(1, D))


@cases
def test_dense_pair_and_csr_inputs_are_bit_identical(case: Case, stream: tuple) -> None:
    X, y = stream
    dense, pair, csr = case.create(D), case.create(D), case.create(D)
    presence = ALGORITHMS[case.algorithm].needs_presence
    for i in range(X.shape[0]):
        row = same_present_set(X[i], presence)
        a = dense.learn(row.toarray().ravel(), y[i])
        b = pair.learn((row.indices[::-1].copy(), row.data[::-1].copy()), y[i])  # unsorted on purpose
        c = csr.learn(row, y[i])
        assert a == b == c
    assert same_state(dense.to_state(), pair.to_state())
    assert same_state(dense.to_state(), csr.to_state())


@cases
@pytest.mark.parametrize(
    "overrides", [{}, {"fit_intercept": True, "intercept_value": 0.5}], ids=["plain", "intercept"]
)
def test_unchecked_entry_points_give_the_checked_bits(case: Case, stream: tuple, overrides: dict) -> None:
    """``score_unchecked``/``predict_unchecked``/``learn_unchecked`` on the canonical vector the
    service's feature parser hands over (explicit zeros kept for a learner that reads presence) are
    ``score``/``predict``/``learn``."""
    X, y = stream
    checked, unchecked = case.create(D, **overrides), case.create(D, **overrides)
    presence = ALGORITHMS[case.algorithm].needs_presence
    for i in range(X.shape[0]):
        row = same_present_set(X[i], presence)
        vector = canonical((row.indices, row.data), D, keep_zeros=presence)
        assert checked.score(row) == unchecked.score_unchecked(vector)
        assert checked.predict(row) == unchecked.predict_unchecked(vector)
        assert checked.learn(row, y[i]) == unchecked.learn_unchecked(vector, int(y[i]))
    assert same_state(checked.to_state(), unchecked.to_state())


@pytest.mark.parametrize("selection", ["hedge", "leader", "window"])
def test_unchecked_ensemble_over_input_forms_gives_the_checked_bits(selection: str, stream: tuple) -> None:
    """The ensemble on the raw vector (``normalize: auto``): the unchecked path still makes every
    input form (L2, the standardisation, which learns), with each way of combining the members."""
    X, y = stream
    params = {"eta": "auto", "loss": "auto", "eta_grid": [0.3, 3.0], "members": "auto", "window": 7}
    params |= {"inputs": ["l2", "standard"], "selection": selection, "fit_intercept": True}
    checked, unchecked = create("acog", n_features=D, **params), create("acog", n_features=D, **params)
    for i in range(X.shape[0]):
        vector = canonical((X[i].indices, X[i].data), D)
        assert checked.score(X[i]) == unchecked.score_unchecked(vector)
        assert checked.predict(X[i]) == unchecked.predict_unchecked(vector)  # the hedge: fewer members
        assert checked.learn(X[i], y[i]) == unchecked.learn_unchecked(vector, int(y[i]))
    assert same_state(checked.to_state(), unchecked.to_state())


def test_unchecked_default_model_gives_the_checked_bits(stream: tuple) -> None:
    """The service's default model (its learner as ``ModelConfig`` builds it) on both paths."""
    X, y = stream
    config = ModelConfig(n_features=D)
    checked, unchecked = config.build_learner(), config.build_learner()
    assert isinstance(checked, EtaGrid) and checked.inputs.forms != ("raw",)
    for i in range(X.shape[0]):
        vector = canonical((X[i].indices, X[i].data), D)
        assert checked.score(X[i]) == unchecked.score_unchecked(vector)
        assert checked.predict(X[i]) == unchecked.predict_unchecked(vector)  # the hedge: fewer members
        assert checked.learn(X[i], y[i]) == unchecked.learn_unchecked(vector, int(y[i]))
    assert same_state(checked.to_state(), unchecked.to_state())


def test_unchecked_oli2ds_reading_zero_as_missing_drops_the_zeros_the_parser_kept(stream: tuple) -> None:
    X, y = stream
    params = {"zero_is_missing": True, "fit_intercept": True}
    checked, unchecked = create("oli2ds", n_features=D, **params), create("oli2ds", n_features=D, **params)
    for i in range(X.shape[0]):
        dense = X[i].toarray().ravel()
        vector = canonical(dense, D, keep_zeros=True)  # what the parser gives a learner that reads presence
        assert checked.score(dense) == unchecked.score_unchecked(vector)
        assert checked.learn(dense, y[i]) == unchecked.learn_unchecked(vector, int(y[i]))
    assert same_state(checked.to_state(), unchecked.to_state())


@cases
def test_state_round_trip_gives_bit_identical_later_scores(case: Case, stream: tuple) -> None:
    X, y = stream
    original = case.create(D)
    original.run(X[:80], y[:80])
    state = original.to_state()
    clone = case.create(D)
    clone.load_state(state)
    assert same_state(clone.to_state(), state)
    assert np.array_equal(original.run(X[80:], y[80:]).scores, clone.run(X[80:], y[80:]).scores)
    after = original.to_state()
    for arr in arrays_of(state):  # to_state hands out copies: writing to them changes nothing
        arr[...] = 7
    assert same_state(original.to_state(), after)


@cases
def test_load_state_checks_the_format_and_a_refused_state_changes_nothing(case: Case, stream: tuple) -> None:
    X, y = stream
    learner = case.create(D)
    learner.run(X[:30], y[:30])
    before = learner.to_state()
    for bad in (
        {**before, "format": 2},
        {k: v for k, v in before.items() if k != "format"},
        {**before, "algorithm": f"{before['algorithm']}-other"},
        {**before, "n_features": D + 1},
        {**before, "surplus": np.zeros(1)},
    ):
        with pytest.raises(InvalidInput) as info:
            learner.load_state(bad)
        assert info.value.field == "state"
        assert same_state(learner.to_state(), before)


@cases
def test_borrowed_state_is_read_only_and_refuses_updates_while_lent(case: Case, stream: tuple) -> None:
    X, y = stream
    learner = case.create(D)
    learner.run(X[:40], y[:40])
    before = learner.to_state()
    with learner.borrowed_state() as state:
        assert same_state(state, before)
        for arr in arrays_of(state):
            assert not arr.flags.writeable
            with pytest.raises(ValueError, match="read-only"):
                arr[...] = 0
        with pytest.raises(StateBorrowed):
            learner.learn(X[40], y[40])
        with pytest.raises(StateBorrowed):
            learner.run(X[40:45], y[40:45])
        with pytest.raises(StateBorrowed):
            learner.load_state(before)
        learner.score(X[40])  # reading is allowed
        assert same_state(state, before)
    assert same_state(learner.to_state(), before)
    learner.learn(X[40], y[40])  # the borrow has ended


@cases
def test_eta_and_describe(case: Case, stream: tuple) -> None:
    X, y = stream
    learner = case.create(D)
    learner.run(X, y)
    facts = learner.describe()
    json.dumps(facts, allow_nan=False)  # JSON-able, for GET /models/{name}
    assert isinstance(learner.eta, float)
    if "eta" not in ALGORITHMS[case.algorithm].param_spec():
        assert math.isnan(learner.eta) and "eta" not in facts
        return
    if isinstance(learner, EtaGrid) and learner.configs[learner.leader()][1] is None:
        # a leader without a rate (the forest, the neighbours): NaN here, null in the JSON facts
        assert math.isnan(learner.eta) and facts["eta"]["selected"] is None
    else:
        assert facts["eta"]["selected"] == learner.eta
    if isinstance(learner, EtaGrid):
        leader = learner.leader()
        assert facts["eta"]["leader"] == leader
        assert facts["eta"]["selected"] == learner.configs[leader][1]
        assert facts["eta"]["loss"] == learner.configs[leader][0]
        assert facts["eta"]["members"] == learner.member_objectives()
        assert [(m["loss"], m["eta"]) for m in facts["eta"]["members"]] == learner.configs
        if learner.selection == "hedge":
            assert facts["eta"]["vote_threshold"] == learner._threshold()
            assert facts["eta"]["vote_threshold"] in HEDGE_THRESHOLDS.tolist()
    else:
        assert learner.eta == case.params()["eta"]
    if "sketch_size" in ALGORITHMS[case.algorithm].param_spec():
        assert facts["sketch"]["size"] == case.params()["sketch_size"]
        assert facts["sketch"]["rounds"] == X.shape[0]


@cases
def test_inputs_are_not_mutated(case: Case, stream: tuple) -> None:
    X, y = stream
    X_before, y_before = X.copy(), y.copy()
    learner = case.create(D)
    learner.run(X, y)
    x = X[3].toarray().ravel()
    x_before = x.copy()
    idx, val = X[4].indices.copy(), X[4].data.copy()
    learner.learn(x, 1)
    learner.learn((idx, val), -1)
    learner.score(x)
    assert np.array_equal(x, x_before)
    assert np.array_equal(idx, X[4].indices) and np.array_equal(val, X[4].data)
    assert (X_before != X).nnz == 0 and np.array_equal(y, y_before)


@cases
def test_runs_are_deterministic(case: Case, stream: tuple) -> None:
    X, y = stream
    a, b = case.create(D), case.create(D)
    assert np.array_equal(a.run(X, y).scores, b.run(X, y).scores)
    assert same_state(a.to_state(), b.to_state())


@cases
def test_it_learns_a_separable_stream(case: Case) -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1500, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    overrides = {"rho": 1.0} if "rho" in ALGORITHMS[case.algorithm].param_spec() else {}
    result = case.create(D, **overrides).run(X, y)
    assert np.mean(result.predictions[-500:] == y[-500:]) > 0.85


@cases
def test_fresh_model_flags_everything(case: Case) -> None:
    """sign(0) = +1: mu = 0 predicts the anomaly class."""
    learner = case.create(D)
    assert learner.score(np.ones(D)) == 0.0
    assert learner.predict(np.ones(D)) == 1
    assert learner.learn(np.ones(D), -1).prediction == 1


@cases
@pytest.mark.parametrize(
    ("x", "problem"),
    [
        (np.r_[np.ones(D - 1), np.nan], "NaN or inf"),
        (np.r_[np.ones(D - 1), np.inf], "NaN or inf"),
        (np.ones(D + 1), "length"),
        (np.ones((1, D)), "1-D"),
        ((np.array([0, D]), np.array([1.0, 1.0])), "outside"),
        ((np.array([2, 2]), np.array([1.0, 1.0])), "more than once"),
        ((np.array([0, 1]), np.array([1.0])), "differ in length"),
        (np.array(["a"] * D), "numeric"),
    ],
)
def test_bad_vectors_are_rejected_and_change_nothing(
    case: Case, x: object, problem: str, stream: tuple
) -> None:
    X, y = stream
    learner = case.create(D)
    learner.run(X[:20], y[:20])
    before = learner.to_state()
    with pytest.raises(InvalidInput, match=problem) as info:
        learner.learn(x, 1)
    assert info.value.field == "x"
    with pytest.raises(ValueError):
        learner.score(x)
    assert same_state(learner.to_state(), before)


@cases
@pytest.mark.parametrize("label", [0, 2, -2, 0.5, "1", True, None])
def test_bad_labels_are_rejected_and_change_nothing(case: Case, label: object) -> None:
    learner = case.create(D)
    before = learner.to_state()
    with pytest.raises(InvalidInput, match="y") as info:
        learner.learn(np.ones(D), label)
    assert info.value.field == "y"
    assert same_state(learner.to_state(), before)


@cases
def test_unknown_parameter_is_named(case: Case) -> None:
    with pytest.raises(InvalidParameter) as info:
        case.create(D, learning_rate=0.1)
    assert info.value.parameter == "learning_rate"


@pytest.mark.parametrize("name", NAMES)
def test_learn_is_checked_then_learn_checked(name: str, stream: tuple) -> None:
    """The two halves of ``learn`` a composite learner uses (check once, learn in every member)."""
    X, y = stream
    whole, halves = create(name, n_features=D), create(name, n_features=D)
    assert isinstance(halves, Learner)
    for i in range(20):
        assert whole.learn(X[i], y[i]) == halves.learn_checked(*halves.checked(X[i], y[i]))
    assert same_state(whole.to_state(), halves.to_state())


@pytest.mark.parametrize(
    ("name", "params", "parameter"),
    [
        ("acog", {"eta": 0.0}, "eta"),
        ("acog", {"eta": -1.0}, "eta"),
        ("acog-diag", {"eta": float("nan")}, "eta"),
        ("ssacog", {"gamma": 0}, "gamma"),
        ("cog", {"alpha_p": 1.0, "rho": "laplace"}, "alpha_p"),  # alpha_n = 0
        ("cog", {"rho": 0.0}, "rho"),
        ("cog", {"rho": "auto"}, "rho"),
        ("cog", {"loss": "III"}, "loss"),
        ("ssacog", {"sketch_size": D + 1}, "sketch_size"),  # m > d
        ("sacog", {"sketch_size": 0}, "sketch_size"),
        ("pa1", {"C": -1.0}, "C"),
        ("arow", {"r": 0.0}, "r"),
        ("acog", {"fit_intercept": "yes"}, "fit_intercept"),
        ("perceptron", {"eta": 1.0}, "eta"),  # not a parameter of the perceptron
    ],
)
def test_bad_parameters_are_rejected_by_name(name: str, params: dict, parameter: str) -> None:
    with pytest.raises(InvalidParameter) as info:
        create(name, n_features=D, **params)
    assert info.value.parameter == parameter
    assert parameter in str(info.value)


def test_unknown_algorithm_and_bad_dimension() -> None:
    with pytest.raises(InvalidParameter, match="algorithm"):
        create("acog-iii", n_features=D)
    with pytest.raises(InvalidParameter, match="n_features"):
        create("acog", n_features=0)


def test_full_covariance_refuses_what_does_not_fit_and_suggests_alternatives() -> None:
    with pytest.raises(InvalidParameter, match="acog-diag or ssacog") as info:
        create("acog", n_features=20_000, memory_budget=2**30)
    assert info.value.parameter == "n_features"
    assert create("acog", n_features=100, memory_budget=2**20).state_nbytes() > 100 * 100 * 8


def test_load_state_rejects_a_foreign_state_and_changes_nothing() -> None:
    acog = create("acog", n_features=D)
    diag = create("acog-diag", n_features=D)
    acog.learn(np.ones(D), -1)
    before = acog.to_state()
    with pytest.raises(InvalidInput, match="algorithm"):
        acog.load_state(diag.to_state())
    bad = dict(before, sigma=np.eye(D + 1))
    with pytest.raises(InvalidInput, match="sigma"):
        acog.load_state(bad)
    for key, value in before.items():
        assert np.array_equal(value, acog.to_state()[key])


def test_laplace_rho_counts_the_labels_before_the_current_one() -> None:
    learner = create("cog", n_features=2, rho="laplace", alpha_p=0.5)
    assert learner.learn(np.ones(2), 1).rho == pytest.approx(1.0)  # (0+1)/(0+1)
    assert learner.learn(np.ones(2), -1).rho == pytest.approx(1 / 2)  # (0+1)/(1+1)
    assert learner.learn(np.ones(2), -1).rho == pytest.approx(2 / 2)
    assert learner.rho == pytest.approx(3 / 2) == learner.rho_estimate
    state = learner.to_state()
    assert list(state["counts"]) == [1, 2]  # the estimate is part of the state


def test_intercept_adds_a_learned_constant_feature() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] > 0.6, 1, -1)  # needs a bias: the boundary misses the origin
    without = create("acog", n_features=3, eta=1.0, rho=1.0).run(X, y)
    with_b = create("acog", n_features=3, eta=1.0, rho=1.0, fit_intercept=True)
    result = with_b.run(X, y)
    assert with_b.weights().shape == (4,)
    accuracy_with = np.mean(result.predictions[-1000:] == y[-1000:])
    assert accuracy_with > np.mean(without.predictions[-1000:] == y[-1000:])
