"""SDROGD and Pegasos against the specification (docs/learners.md §8, acceptance tests 2-4) and
the numba learners against the readable reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.reference import sdrogd as ref
from service.learners import InvalidParameter, create

X_REF = np.array(
    [[1, 0, 2], [0, 1, -1], [2, 1, 0], [-1, 2, 1], [1, 1, 1], [0, -2, 1], [2, 0, -1], [1, -1, 0], [0, 0, 3]],
    dtype=float,
)
Y_REF = np.array([1, -1, 1, -1, -1, 1, 1, -1, 1])
REF_PARAMS = {"sketch_fraction": 0.5, "batch_size": 3, "lda_weight": 0.5, "lam": 0.25}  # l = ceil(1.5) = 2
DEFAULT_STEPS = [
    [1.0, 0.0, 1.0],
    [1.0761323458, -0.7430555556, 0.6802990125],
    [1.0522078968, -0.6496839407, 0.7468737473],
]
EXPECTED = {
    "default": DEFAULT_STEPS,
    "upper": [*DEFAULT_STEPS[:2], [1.0522078968, -0.6496839407, 0.8602569160]],
    "printed": [
        DEFAULT_STEPS[0],
        [1.2219656791, -0.5972222222, 0.8747434569],
        [1.3543603911, -0.4767699406, 1.0692808712],
    ],
}
VARIANTS = {"default": {}, "upper": {"sketch_rows": "upper"}, "printed": {"eq17": "printed"}}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_reference_vector_of_the_spec(variant: str) -> None:
    params = {**REF_PARAMS, **VARIANTS[variant]}
    steps = ref.run("sdrogd", X_REF, Y_REF, **params)["steps"]
    np.testing.assert_allclose(steps, EXPECTED[variant], rtol=0, atol=1e-9)
    learner = create("sdrogd", n_features=3, **params)
    fast = []
    for x, y in zip(X_REF, Y_REF, strict=True):
        if learner.learn(x, int(y)).updated:
            fast.append(learner.weights())
    np.testing.assert_allclose(fast, EXPECTED[variant], rtol=0, atol=1e-9)
    assert learner.describe()["batch"]["steps"] == 3


def test_with_l_at_least_d_the_step_uses_the_exact_scatter_matrices() -> None:
    """B'B = X'X, and z = R w with R = eta S_w - (1 - eta) S_b built densely from eqs. (4)-(6)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 5)) + np.array([0.5, 0, 0, 0, -1.0])
    y = np.where(rng.random(50) < 0.3, 1, -1)
    p = {"sketch_fraction": 1.0, "batch_size": 1000, "lda_weight": 0.35}
    m = ref.run("sdrogd", X, y, **p)
    np.testing.assert_allclose(m["B"].T @ m["B"], X.T @ X, rtol=1e-9, atol=1e-9)
    N = len(y)
    u = X.mean(axis=0)
    S_b = sum(np.mean(y == c) * np.outer(X[y == c].mean(0) - u, X[y == c].mean(0) - u) for c in (-1, 1))
    S_w = X.T @ X / N - np.outer(u, u) - S_b
    R = 0.35 * S_w - 0.65 * S_b
    w = rng.normal(size=5)
    np.testing.assert_allclose(ref.scatter_times(m, w, p, 5), R @ w, rtol=1e-9, atol=1e-9)
    learner = create("sdrogd", n_features=5, **p)
    learner.run(X, y)
    state = learner.to_state()
    np.testing.assert_allclose(state["sketch"].T @ state["sketch"], X.T @ X, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("batch_size", [3, 6])
def test_with_equal_class_means_sdrogd_is_pegasos_exactly(batch_size: int) -> None:
    """eta = 0, lam = 1 and (p1, +1), (p2, +1), ((p1 + p2) / 2, -1): R_hat = 0, so SDROGD is Pegasos."""
    p1, p2 = np.array([1.0, 2.0, -1.0, 0.5]), np.array([3.0, -2.0, 1.0, 1.5])
    X = np.tile(np.vstack([p1, p2, (p1 + p2) / 2]), (20, 1))
    y = np.tile([1, 1, -1], 20)
    common = {"lam": 1.0, "batch_size": batch_size}
    sd = create("sdrogd", n_features=4, lda_weight=0.0, sketch_fraction=0.5, **common)
    peg = create("pegasos", n_features=4, **common)
    a, b = sd.run(X, y), peg.run(X, y)
    assert np.array_equal(a.scores, b.scores)
    assert np.array_equal(sd.weights(), peg.weights()) and sd.weights().any()
    m_sd = ref.run("sdrogd", X, y, lda_weight=0.0, sketch_fraction=0.5, **common)
    m_peg = ref.run("pegasos", X, y, **common)
    assert np.array_equal(m_sd["w"], m_peg["w"])


STREAM_CASES = [
    ("sdrogd", {"sketch_fraction": 0.3, "batch_size": 7, "lda_weight": 0.7, "lam": 0.5}),
    ("sdrogd", {"sketch_fraction": 0.2, "batch_size": 4, "lda_weight": 1.0, "sketch_rows": "upper"}),
    ("sdrogd", {"sketch_fraction": 0.5, "batch_size": 9, "eq17": "printed", "loss": "I", "rho": 3.0}),
    ("sdrogd", {"sketch_fraction": 1.0, "batch_size": 5, "lda_weight": 0.9, "rho": 0.4}),
    ("pegasos", {"lam": 0.25, "batch_size": 6, "loss": "I", "rho": 2.5}),
    ("pegasos", {"lam": 2.0, "batch_size": 1, "rho": 4.0}),
]


@pytest.mark.parametrize(("algorithm", "params"), STREAM_CASES)
@pytest.mark.parametrize("intercept", [False, True])
def test_numba_learner_follows_the_reference(algorithm: str, params: dict, intercept: bool) -> None:
    rng = np.random.default_rng(17)
    X = rng.normal(size=(240, 10)) * (rng.random((240, 10)) < 0.6)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    y = np.where(X @ rng.normal(size=10) > 0.2, 1, -1)
    m = ref.run(algorithm, X, y, fit_intercept=intercept, **params)
    learner = create(algorithm, n_features=10, fit_intercept=intercept, **params)
    result = learner.run(X, y)
    np.testing.assert_allclose(result.scores, m["scores"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(learner.weights(), m["w"], rtol=1e-9, atol=1e-9)
    assert learner.describe()["batch"]["steps"] == m["t"]
    assert learner.describe()["batch"]["labels_since_step"] == m["k"]


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    loss=st.sampled_from(["I", "II"]),
    rho=st.floats(0.2, 5.0),
    y=st.sampled_from([-1, 1]),
)
def test_hinge_part_follows_the_cost_sensitive_losses(seed: int, loss: str, rho: float, y: int) -> None:
    """Loss I: joins A_t^+ when rho_y - y w.x > 0, adds y x; loss II: when 1 - y w.x > 0, adds rho_y y x."""
    rng = np.random.default_rng(seed)
    learner = create("pegasos", n_features=4, lam=1.0, batch_size=1, loss=loss, rho=rho)
    learner.learn(rng.normal(size=4), 1)  # one step (batch 1): w != 0
    x = rng.normal(size=4)
    w, s = learner.weights(), learner.score(x)
    rho_y = rho if y == 1 else 1.0
    expected = max(0.0, rho_y - y * s) if loss == "I" else rho_y * max(0.0, 1.0 - y * s)
    info = learner.learn(x, y)
    assert info.loss == pytest.approx(expected, rel=1e-12, abs=1e-12)
    g = (y * x if loss == "I" else rho_y * y * x) if expected > 0 else np.zeros(4)
    np.testing.assert_allclose(learner.weights(), w - (1.0 / 2) * (w - g), rtol=1e-12, atol=1e-12)


def test_a_step_that_would_not_be_finite_is_refused_and_counted() -> None:
    """eta = 0 makes R_hat = -S_b: on data of scale 1e150 the second step overflows."""
    learner = create("sdrogd", n_features=2, lda_weight=0.0, lam=0.0, batch_size=2, sketch_fraction=1.0)
    big = np.array([1e150, -1e150])
    for _ in range(4):
        learner.learn(big, 1)
        learner.learn(-big, -1)
    described = learner.describe()["batch"]
    assert described["steps"] == 1 and described["refused_steps"] == 3
    assert np.all(np.isfinite(learner.to_state()["w"]))
    assert described["labels_since_step"] == 0
    state = learner.to_state()
    assert all(np.all(np.isfinite(v)) for v in state.values() if isinstance(v, np.ndarray))


def test_an_example_whose_squared_norm_overflows_is_skipped_whole() -> None:
    learner = create("sdrogd", n_features=2, batch_size=2, sketch_fraction=1.0)
    learner.learn(np.array([1.0, 2.0]), 1)
    before = learner.to_state()
    learner.learn(np.array([1e155, 1e155]), -1)
    after = learner.to_state()
    assert learner.describe()["sketch"]["skipped_examples"] == 1
    for key in ("w", "g", "sums", "sketch"):
        assert np.array_equal(before[key], after[key])


def test_flush_steps_on_the_partial_batch() -> None:
    learner = create("sdrogd", n_features=3, batch_size=60)
    for x, y in zip(X_REF, Y_REF, strict=True):
        learner.learn(x, int(y))
    assert learner.describe()["batch"] == {"size": 60, "labels_since_step": 9, "steps": 0, "refused_steps": 0}
    assert learner.describe()["sketch"]["size"] == 1
    assert not learner.weights().any()
    assert learner.flush() and learner.weights().any()
    assert learner.describe()["batch"]["labels_since_step"] == 0 and not learner.flush()


def test_memory_budget_covers_the_sketch() -> None:
    learner = create("sdrogd", n_features=999, sketch_fraction=0.1)  # d = 999, l = 100
    assert learner.state_nbytes() >= (2 * 100 + 5) * 999 * 8
    with pytest.raises(InvalidParameter, match="sketch_fraction") as info:
        create("sdrogd", n_features=999, sketch_fraction=0.1, memory_budget=(2 * 100 + 5) * 999 * 8 - 1)
    assert info.value.parameter == "n_features"


@pytest.mark.parametrize(
    ("algorithm", "params", "parameter"),
    [
        ("sdrogd", {"lda_weight": 1.5}, "lda_weight"),
        ("sdrogd", {"lda_weight": -0.1}, "lda_weight"),
        ("sdrogd", {"lam": -1.0}, "lam"),
        ("sdrogd", {"sketch_fraction": 0.0}, "sketch_fraction"),
        ("sdrogd", {"sketch_fraction": 1.5}, "sketch_fraction"),
        ("sdrogd", {"batch_size": 0}, "batch_size"),
        ("sdrogd", {"batch_size": 2.5}, "batch_size"),
        ("sdrogd", {"eq17": "other"}, "eq17"),
        ("sdrogd", {"sketch_rows": "lower"}, "sketch_rows"),
        ("sdrogd", {"eta": 0.3}, "eta"),  # the paper's eta is lda_weight here
        ("pegasos", {"lam": 0.0}, "lam"),
        ("pegasos", {"sketch_fraction": 0.1}, "sketch_fraction"),
        ("sdrogd", {"eta": "auto"}, "eta"),
        ("pegasos", {"loss": "auto"}, "loss"),
    ],
)
def test_bad_parameters_are_named(algorithm: str, params: dict, parameter: str) -> None:
    with pytest.raises(InvalidParameter) as info:
        create(algorithm, n_features=4, **params)
    assert info.value.parameter == parameter
