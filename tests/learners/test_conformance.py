"""The contract every learner keeps (river's ``checks`` idea: one suite, every estimator)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from service.learners import ALGORITHMS, InvalidInput, InvalidParameter, create

from .streams import NAMES, params_for, sparse_stream

D = 9


@pytest.fixture(scope="module")
def stream() -> tuple[sp.csr_matrix, np.ndarray]:
    return sparse_stream(160, D, density=0.5, seed=11)


def fresh(name: str, **overrides: object) -> object:
    return create(name, n_features=D, **params_for(name, **overrides))


@pytest.mark.parametrize("name", NAMES)
def test_run_equals_learn_row_by_row_bit_for_bit(name: str, stream: tuple) -> None:
    X, y = stream
    batch = fresh(name).run(X, y)
    one = fresh(name)
    scores = np.array([one.learn(X[i], y[i]).score for i in range(X.shape[0])])
    assert np.array_equal(batch.scores, scores)


@pytest.mark.parametrize("name", NAMES)
def test_dense_pair_and_csr_inputs_are_bit_identical(name: str, stream: tuple) -> None:
    X, y = stream
    dense, pair, csr = fresh(name), fresh(name), fresh(name)
    for i in range(X.shape[0]):
        row = X[i]
        a = dense.learn(row.toarray().ravel(), y[i])
        b = pair.learn((row.indices[::-1].copy(), row.data[::-1].copy()), y[i])  # unsorted on purpose
        c = csr.learn(row, y[i])
        assert a == b == c
    for key, value in dense.to_state().items():
        assert np.array_equal(value, pair.to_state()[key])
        assert np.array_equal(value, csr.to_state()[key])


@pytest.mark.parametrize("name", NAMES)
def test_state_round_trip_gives_bit_identical_later_scores(name: str, stream: tuple) -> None:
    X, y = stream
    original = fresh(name)
    original.run(X[:80], y[:80])
    state = original.to_state()
    clone = fresh(name)
    clone.load_state(state)
    assert np.array_equal(original.run(X[80:], y[80:]).scores, clone.run(X[80:], y[80:]).scores)
    state["w"][:] = 123.0  # to_state hands out copies: mutating them changes nothing
    assert not np.array_equal(original.to_state()["w"], state["w"])


@pytest.mark.parametrize("name", NAMES)
def test_inputs_are_not_mutated(name: str, stream: tuple) -> None:
    X, y = stream
    X_before, y_before = X.copy(), y.copy()
    learner = fresh(name)
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


@pytest.mark.parametrize("name", NAMES)
def test_runs_are_deterministic(name: str, stream: tuple) -> None:
    X, y = stream
    assert np.array_equal(fresh(name).run(X, y).scores, fresh(name).run(X, y).scores)


@pytest.mark.parametrize("name", NAMES)
def test_it_learns_a_separable_stream(name: str) -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1500, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    overrides = {"rho": 1.0} if "rho" in ALGORITHMS[name].param_spec() else {}
    result = fresh(name, **overrides).run(X, y)
    assert np.mean(result.predictions[-500:] == y[-500:]) > 0.85


@pytest.mark.parametrize("name", NAMES)
def test_fresh_model_flags_everything(name: str) -> None:
    """sign(0) = +1: mu = 0 predicts the anomaly class."""
    assert fresh(name).predict(np.ones(D)) == 1


@pytest.mark.parametrize("name", NAMES)
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
    name: str, x: object, problem: str, stream: tuple
) -> None:
    X, y = stream
    learner = fresh(name)
    learner.run(X[:20], y[:20])
    before = learner.to_state()
    with pytest.raises(InvalidInput, match=problem) as info:
        learner.learn(x, 1)
    assert info.value.field == "x"
    with pytest.raises(ValueError):
        learner.score(x)
    for key, value in before.items():
        assert np.array_equal(value, learner.to_state()[key])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("label", [0, 2, -2, 0.5, "1", True, None])
def test_bad_labels_are_rejected(name: str, label: object) -> None:
    learner = fresh(name)
    with pytest.raises(InvalidInput, match="y"):
        learner.learn(np.ones(D), label)
    assert learner.to_state()["counts"].sum() == 0


@pytest.mark.parametrize("name", NAMES)
def test_unknown_parameter_is_named(name: str) -> None:
    with pytest.raises(InvalidParameter) as info:
        create(name, n_features=D, learning_rate=0.1)
    assert info.value.parameter == "learning_rate"


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
