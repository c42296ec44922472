"""The nonlinear learners' maths: the maps' inner products, the Nystrom switch, seeds and limits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from service.learners import InvalidParameter, create
from service.learners.feature_maps import nystrom_map, quadratic_dim, quadratic_map, rff_map
from service.learners.nonlinear import QUADRATIC_MAX_FEATURES

finite = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)


def sparse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    idx = np.flatnonzero(x).astype(np.int64)
    return idx, x[idx].astype(np.float64)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, 5, elements=finite), arrays(np.float64, 5, elements=finite))
def test_quadratic_map_is_the_degree_two_polynomial_kernel(x: np.ndarray, v: np.ndarray) -> None:
    """``z(x) . z(v) = x . v + (x . v)^2``."""
    learner = create("quadratic", 5)
    zx = quadratic_map(learner._st, *sparse(x))
    zv = quadratic_map(learner._st, *sparse(v))
    assert zx.shape == (quadratic_dim(5),)
    dot = float(x @ v)
    assert math.isclose(float(zx @ zv), dot + dot * dot, rel_tol=1e-9, abs_tol=1e-9)


def test_random_fourier_features_approximate_the_gaussian_kernel() -> None:
    learner = create("fogd", 4, n_components=4096, bandwidth=0.8, seed=3)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, v = rng.normal(size=4) / 2, rng.normal(size=4) / 2
        k = math.exp(-float(np.sum((x - v) ** 2)) / (2 * 0.8**2))
        approx = float(rff_map(learner._st, *sparse(x)) @ rff_map(learner._st, *sparse(v)))
        assert abs(approx - k) < 0.05


def test_fogd_draws_its_map_from_the_seed() -> None:
    a, b, c = create("fogd", 3, seed=5), create("fogd", 3, seed=5), create("fogd", 3, seed=6)
    assert np.array_equal(a.to_state()["omega"], b.to_state()["omega"])
    assert not np.array_equal(a.to_state()["omega"], c.to_state()["omega"])


def test_nystrom_switch_keeps_the_function_and_reproduces_the_kernel_on_kept_examples() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    budget = 10
    learner = create("nogd", 3, budget=budget, bandwidth=0.5, eta=0.5, rho=1.0)
    for i in range(X.shape[0]):
        state = learner.to_state()
        if int(state["tally"][0]) == budget - 1:  # the next update fills the budget
            before = learner.score(X[(i + 1) % len(X)])
            info = learner.learn(X[i], y[i])
            if info.updated:
                probe = X[(i + 1) % len(X)]
                # after the switch: the function before plus the new term eta c y k(x_i, .), c = 1
                kept = learner.to_state()["landmarks"][budget - 1]
                k = math.exp(-float(np.sum((probe - kept) ** 2)) / (2 * 0.25))
                expected = before + (0.5 * y[i] * k if info.loss > 0 else 0.0)
                assert math.isclose(learner.score(probe), expected, rel_tol=1e-6, abs_tol=1e-8)
                break
        else:
            learner.learn(X[i], y[i])
    final = learner.to_state()
    assert bool(final["tally"][1])
    L = final["landmarks"]
    z = np.array([nystrom_map(learner._st, *sparse(row)) for row in L])
    K = np.exp(-np.sum((L[:, None] - L[None]) ** 2, axis=2) / (2 * 0.25))
    assert np.allclose(z @ z.T, K, atol=1e-6)


@pytest.mark.parametrize("update", ["ogd", "acog-diag", "acog"])
@pytest.mark.parametrize("name", ["quadratic", "fogd", "nogd"])
def test_every_map_learns_a_nonlinear_stream_a_linear_model_cannot(name: str, update: str) -> None:
    """Inside a circle against outside it, on 2-d points with a constant third coordinate."""
    rng = np.random.default_rng(2)
    P = rng.uniform(-1, 1, size=(3000, 2))
    y = np.where(np.sum(P**2, axis=1) < 0.4, 1, -1)
    X = np.hstack([P, np.ones((3000, 1))])
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X = X[:, :2] * 3  # drop the homogeneous coordinate: no linear rule separates the classes
    learner = create(name, 2, update=update, eta=1.0, rho=1.0, fit_intercept=True)
    predictions = learner.run(X, y).predictions
    assert np.mean(predictions[-1000:] == y[-1000:]) > 0.8


def test_quadratic_refuses_a_dimension_over_its_cap() -> None:
    with pytest.raises(InvalidParameter) as info:
        create("quadratic", QUADRATIC_MAX_FEATURES + 1)
    assert info.value.parameter == "n_features"
    create("quadratic", QUADRATIC_MAX_FEATURES)


@pytest.mark.parametrize(
    ("name", "params", "field"),
    [
        ("fogd", {"n_components": 0}, "n_components"),
        ("fogd", {"seed": -1}, "seed"),
        ("fogd", {"bandwidth": 0.0}, "bandwidth"),
        ("nogd", {"budget": 10**6}, "budget"),
        ("nogd", {"update": "newton"}, "update"),
    ],
)
def test_bad_map_parameters_are_named(name: str, params: dict, field: str) -> None:
    with pytest.raises(InvalidParameter) as info:
        create(name, 3, **params)
    assert info.value.parameter == field
