"""OLI2DS against ``docs/learners.md`` §9: the acceptance tests, and the fast learner
against the readable reference."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.reference import oli2ds as ref
from service.learners import InvalidParameter, create

TRACE = [
    ({0: 1.0, 1: 2.0}, 1),
    ({1: 1.0, 2: -1.0}, -1),
    ({0: 2.0, 2: 1.0}, 1),
    ({0: 1.0, 1: 1.0, 2: 1.0}, -1),
]
TRACE_SCORES = [0.0, 0.08, 0.016, 0.082222]
TRACE_WEIGHTS = [
    [0.04, 0.08, 0.0],
    [0.04, 0.053333, 0.0],
    [0.056, 0.053333, 0.032],
    [0.029333, 0.048, 0.005333],
]


def pair(x: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    keys = sorted(x)
    return np.array(keys, dtype=np.int64), np.array([x[k] for k in keys], dtype=np.float64)


def test_the_spec_trace_reference_and_learner() -> None:
    """Acceptance 1: C = .01, θ = 8, reference statistics, to 1e-6."""
    state = ref.initial_state(3)
    learner = create("oli2ds", n_features=3)
    for (x, y), s, w in zip(TRACE, TRACE_SCORES, TRACE_WEIGHTS, strict=True):
        state, s_ref = ref.learn(state, x, y, ref.Params())
        info = learner.learn(pair(x), y)
        assert s_ref == pytest.approx(s, abs=1e-6) and info.score == pytest.approx(s, abs=1e-6)
        assert np.allclose(state.w, w, atol=1e-6) and np.allclose(learner.weights(), w, atol=1e-6)
    assert np.allclose(state.h, [1 / 3, 1 / 3, 4 / 3], atol=1e-12)
    assert np.allclose(learner.informativeness(), [1 / 3, 1 / 3, 4 / 3], atol=1e-12)


def test_a_vanished_feature_keeps_its_weight_and_resumes_it() -> None:
    """Acceptance 2: absent features' weights never change; a returning one scores with its stored weight."""
    learner = create("oli2ds", n_features=3)
    learner.learn(pair({0: 1.0, 1: 2.0}), 1)
    learner.learn(pair({0: -1.0, 1: 0.5}), -1)
    stored = learner.weights()[1]
    assert stored != 0.0
    for k in range(5):  # feature 1 vanishes for five labels
        learner.learn(pair({0: 0.3 * k - 0.4, 2: 1.0 - k}), 1 if k % 2 else -1)
        assert learner.weights()[1] == stored
    assert 1 not in learner.present_features()
    h, w = learner.informativeness(), learner.weights()
    p_c = h[0] / (h[0] + h[1])  # feature 0 is common, feature 1 returns
    expected = p_c * w[0] * 0.7 + (1 - p_c) * stored * 2.0
    assert learner.score(pair({0: 0.7, 1: 2.0})) == pytest.approx(expected, rel=1e-12)


def test_cost_follows_the_laplace_class_counts_without_the_first_label() -> None:
    """Acceptance 3: c₊/c₋ = n₋/n₊; n starts at 1, the first label is not counted, the current one is."""
    learner = create("oli2ds", n_features=2)
    labels = [1, -1, -1, 1, -1, -1, -1]
    for k, y in enumerate(labels):
        info = learner.learn(pair({0: 1.0, 1: float(k)}), y)
        counted = labels[1 : k + 1]
        n_pos, n_neg = 1 + counted.count(1), 1 + counted.count(-1)
        assert info.rho == n_neg / n_pos
        state = replace(ref.initial_state(2), t=k + 1, n_pos=n_pos, n_neg=n_neg)
        c_pos, c_neg = ref.cost(state, 1, ref.Params()), ref.cost(state, -1, ref.Params())
        assert c_pos / c_neg == pytest.approx(n_neg / n_pos, rel=1e-12)
        assert c_pos == pytest.approx(n_neg / (n_pos + n_neg), rel=1e-12)


def test_confidence_is_one_when_no_feature_is_informative_yet() -> None:
    """Acceptance 3: p_c = 1 when all h = 0 (0/0), so a feature that is new with h = 0 gets no step."""
    learner = create("oli2ds", n_features=3)
    learner.learn(pair({0: 1.0}), 1)  # h_0 = 0 after one value
    info = learner.learn(pair({1: 5.0}), -1)  # Cm = {}, Nw = {1}: h sums are 0 -> p_c = 1, p_n = 0
    assert info.score == 0.0 and info.loss == 1.0
    assert learner.weights()[1] == 0.0
    learner.learn(pair({0: 3.0, 1: 1.0}), 1)  # now h_0 > 0, h_1 > 0: both move
    assert learner.weights()[1] != 0.0


def test_cap_form_bounds_the_step_by_the_cost() -> None:
    """``cost_in="cap"``: τ = min(C θ c, ℓ/q) against the code's θ c min(C, ℓ/q)."""
    for cost_in, expected in (("scale", 8 * 0.5 * min(0.5, 1 / 4)), ("cap", min(0.5 * 8 * 0.5, 1 / 4))):
        learner = create("oli2ds", n_features=1, C=0.5, cost_in=cost_in)
        learner.learn(pair({0: 2.0}), 1)  # first label: p_c = 1, q = 4, loss = 1, c = 1/2
        assert learner.weights()[0] == pytest.approx(expected * 2.0, rel=1e-15)


def test_an_explicit_zero_is_present_unless_zero_is_missing() -> None:
    x_zero, x_absent = pair({0: 1.0, 1: 0.0}), pair({0: 1.0})
    follow = pair({0: 0.5, 1: 2.0})
    a, b = create("oli2ds", n_features=2), create("oli2ds", n_features=2)
    for learner, x in ((a, x_zero), (b, x_absent)):
        learner.learn(x, 1)
        learner.learn(pair({0: -1.0, 1: 1.0}), -1)
    assert a.to_state()["cnt"][1] == 1 + 1 and b.to_state()["cnt"][1] == 1  # the zero counted as a value
    assert a.score(follow) != b.score(follow)
    c, d = (create("oli2ds", n_features=2, zero_is_missing=True) for _ in range(2))
    for learner, x in ((c, x_zero), (d, x_absent)):
        learner.learn(x, 1)
        learner.learn(pair({0: -1.0, 1: 1.0}), -1)
    for key, value in c.to_state().items():
        assert np.array_equal(value, d.to_state()[key])


def test_score_changes_nothing() -> None:
    learner = create("oli2ds", n_features=3)
    for x, y in TRACE[:3]:
        learner.learn(pair(x), y)
    before = learner.to_state()
    learner.score(pair({0: 4.0, 1: -2.0, 2: 7.0}))
    for key, value in before.items():
        assert np.array_equal(value, learner.to_state()[key])


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"statistics": "variance"}, "statistics"),
        ({"cost_in": "both"}, "cost_in"),
        ({"B": 1.5}, "B"),
        ({"B": 0.0}, "B"),
        ({"theta": -1.0}, "theta"),
        ({"C": 0.0}, "C"),
        ({"lambda_s": float("inf")}, "lambda_s"),
        ({"zero_is_missing": 1}, "zero_is_missing"),
        ({"rho": "auto"}, "rho"),
    ],
)
def test_bad_parameters_are_named(params: dict[str, Any], parameter: str) -> None:
    with pytest.raises(InvalidParameter) as info:
        create("oli2ds", n_features=3, **params)
    assert info.value.parameter == parameter


# --- properties --------------------------------------------------------------------------------

U = 6
values = st.floats(-4, 4, allow_nan=False).map(lambda v: 0.0 if abs(v) < 0.5 else round(v, 3))
examples = st.dictionaries(st.integers(0, U - 1), values, max_size=U)
streams = st.lists(st.tuples(examples, st.sampled_from([-1, 1])), min_size=1, max_size=40)
OPTIONS = [
    {},
    {"statistics": "welford"},
    {"cost_in": "cap", "C": 0.3},
    {"rho": 4.0, "theta": 2.0},
    {"zero_is_missing": True, "alpha_p": 0.2},
    {"sparsity": True, "lambda_s": 0.05, "B": 0.5},
]


@pytest.mark.parametrize("options", OPTIONS, ids=[",".join(o) or "defaults" for o in OPTIONS])
@settings(max_examples=40, deadline=None)
@given(stream=streams)
def test_learner_equals_the_reference(options: dict[str, Any], stream: list) -> None:
    """Bit for bit (the sparsity step's sums are ordered differently: 1e-12)."""
    learner = create("oli2ds", n_features=U, **options)
    params = ref.Params(**options)
    state = ref.initial_state(U)
    tol = 1e-12 if options.get("sparsity") else 0.0
    for x, y in stream:
        assert learner.score(pair(x)) == pytest.approx(ref.score(state, x, params), abs=tol, rel=0)
        info = learner.learn(pair(x), y)
        state, s = ref.learn(state, x, y, params)
        assert info.score == pytest.approx(s, abs=tol, rel=0)
        assert np.allclose(learner.weights(), state.w, atol=tol, rtol=0)
        assert np.array_equal(learner.informativeness(), state.h)


@settings(max_examples=60, deadline=None)
@given(stream=streams)
def test_absent_weights_never_move(stream: list) -> None:
    learner = create("oli2ds", n_features=U)
    for x, y in stream:
        before = learner.weights()
        learner.learn(pair(x), y)
        absent = [i for i in range(U) if i not in x]
        assert np.array_equal(learner.weights()[absent], before[absent])


@settings(max_examples=60, deadline=None)
@given(xs=st.lists(st.floats(-100, 100, allow_nan=False), min_size=1, max_size=30))
def test_welford_statistics_are_the_population_variance(xs: list[float]) -> None:
    learner = create("oli2ds", n_features=1, statistics="welford")
    for k, v in enumerate(xs):
        learner.learn(pair({0: v}), 1 if k % 3 else -1)
    assert learner.informativeness()[0] == pytest.approx(np.var(xs), rel=1e-9, abs=1e-9)
    assert learner.to_state()["mean"][0] == pytest.approx(np.mean(xs), rel=1e-9, abs=1e-9)


def test_reference_statistics_follow_the_codes_rule() -> None:
    """Second value: ((mean - x)/2)²; afterwards h += δ²/cnt (not a variance)."""
    a, b, c = 1.0, 4.0, -2.0
    learner = create("oli2ds", n_features=1)
    for v in (a, b, c):
        learner.learn(pair({0: v}), 1)
    mean2 = (a + b) / 2
    expected = ((a - b) / 2) ** 2 + (c - mean2) ** 2 / 3
    assert learner.informativeness()[0] == pytest.approx(expected, rel=1e-15)


@settings(max_examples=40, deadline=None)
@given(stream=streams)
def test_sparsity_bounds_the_weighted_mass_and_the_support(stream: list) -> None:
    learner = create("oli2ds", n_features=U, sparsity=True, lambda_s=0.05, B=0.5, C=1.0)
    for x, y in stream:
        learner.learn(pair(x), y)
        if not x:
            continue
        w, h, seen = learner.weights(), learner.informativeness(), learner.seen_features()
        informativeness = h[seen] / h[seen].sum() if h[seen].sum() else np.ones(seen.size)
        assert np.abs(w[seen] * informativeness).sum() <= 0.05 * (1 + 1e-12)
        assert np.count_nonzero(w) <= max(1, int(np.floor(0.5 * seen.size)))


@settings(max_examples=20, deadline=None)
@given(stream=streams)
def test_through_the_driver_the_state_ends_in_the_same_bits(stream: list) -> None:
    """The registered kernels (the driver's shape) and ``learn`` (OLI2DS's own) give one state."""
    from service.learners import driver

    ours, driven = create("oli2ds", n_features=U), create("oli2ds", n_features=U)
    for x, y in stream:
        ours.learn(pair(x), y)
        vector, label = driven.checked(pair(x), y)
        driver.learn_one(driven._st, driven._kernel_params, driven._rho_cfg, vector[0], vector[1], label)
    for key, value in ours.to_state().items():
        assert np.array_equal(value, driven.to_state()[key])


@settings(max_examples=30, deadline=None)
@given(stream=streams)
def test_the_reference_is_pure_state_in_state_out(stream: list) -> None:
    """``learn(state, x, y, params) -> (state', s)`` leaves its inputs as they were."""
    state = ref.initial_state(U)
    for x, y in stream:
        before = {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in vars(state).items()}
        x_before = dict(x)
        after, _ = ref.learn(state, x, y, ref.Params())
        for key, value in before.items():
            assert (
                np.array_equal(getattr(state, key), value)
                if isinstance(value, np.ndarray)
                else getattr(state, key) == value
            )
        assert x == x_before and after is not state
        state = after


def test_the_reference_squares_as_the_kernel_does() -> None:
    """The second value's ``h = ((mean - x) / 2)^2``: Python's ``** 2`` (``pow``) and numba's
    (a product) differ in the last bit for these values; the reference squares by a product too."""
    learner = create("oli2ds", n_features=1, rho=4.0, theta=2.0)
    params, state = ref.Params(rho=4.0, theta=2.0), ref.initial_state(1)
    for value, y in ((-0.004, 1), (2.755, -1)):
        learner.learn(pair({0: value}), y)
        state, _ = ref.learn(state, {0: value}, y, params)
    assert learner.informativeness()[0] == state.h[0] == 1.90302025
