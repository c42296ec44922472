"""The Fixed-Share vote (:mod:`service.learners.hedge`): its prior over the roster and its update,
checked against a plain-Python transcription of the equations."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.learners.errors import InvalidInput
from service.learners.hedge import THRESHOLDS as HEDGE_THRESHOLDS
from service.learners.hedge import chosen_threshold, group_prior, hedge_steps, hedge_vote
from service.model_config import ModelConfig

THRESHOLDS = [0.0, -0.4, -0.2, -0.1, 0.1, 0.2, 0.4]


def objective(t_p: int, t_n: int, m_p: int, m_n: int, cost: bool, c_p: float) -> float:
    """The model's objective (higher is better), alpha_p = 0.5; a class not seen yet counts as perfect."""
    if cost:
        return -(c_p * m_p + (1.0 - c_p) * m_n)
    sens = (t_p - m_p) / t_p if t_p else 1.0
    spec = (t_n - m_n) / t_n if t_n else 1.0
    return 0.5 * sens + 0.5 * spec


def fixed_share(S: list[list[float]], ys: list[int], prior: list[float], cost: bool, c_p: float,
                eta: float, alpha: float) -> tuple[list[float], list[float]]:  # fmt: skip
    """The scores before each label and the final weights, by the equations of the module docstring."""
    w = list(prior)
    t_p = t_n = 0
    mistakes = [[0, 0] for _ in THRESHOLDS]
    scores = []
    for row, y in zip(S, ys, strict=True):
        vote = sum(wk * min(1.0, max(-1.0, s)) for wk, s in zip(w, row, strict=True)) / sum(w)
        values = [objective(t_p, t_n, m_p, m_n, cost, c_p) for m_p, m_n in mistakes]
        top = max(values)
        theta = THRESHOLDS[next(q for q, v in enumerate(values) if v >= top - 1e-12 * max(1.0, abs(top)))]
        scores.append(vote - theta)
        for q, th in enumerate(THRESHOLDS):
            if (1 if vote >= th else -1) != y:
                mistakes[q][0 if y == 1 else 1] += 1
        c = (
            (c_p if y == 1 else 1.0 - c_p)
            if cost
            else 1.0 - ((t_p if y == 1 else t_n) + 1.0) / (t_p + t_n + 2.0)
        )
        w = [wk * math.exp(-eta * c * ((1 if s >= 0 else -1) != y)) for wk, s in zip(w, row, strict=True)]
        z = sum(w)
        w = [(1.0 - alpha) * wk / z + alpha * pk for wk, pk in zip(w, prior, strict=True)]
        t_p, t_n = t_p + (y == 1), t_n + (y != 1)
    return scores, w


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=30))
def test_the_prior_gives_every_group_the_same_mass_split_evenly(groups: list[str]) -> None:
    prior = group_prior(groups)
    sizes = Counter(groups)
    assert math.isclose(float(prior.sum()), 1.0, rel_tol=1e-12)
    for g in sizes:
        mass = [float(p) for p, h in zip(prior, groups, strict=True) if h == g]
        assert max(mass) == min(mass)
        assert math.isclose(sum(mass), 1.0 / len(sizes), rel_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda k: st.tuples(
            st.lists(
                st.lists(st.floats(-3.0, 3.0, allow_subnormal=False), min_size=k, max_size=k),
                min_size=1,
                max_size=60,
            ),
            st.lists(st.sampled_from(["x", "y", "z"]), min_size=k, max_size=k),
        )
    ),
    st.data(),
    st.booleans(),
    st.sampled_from([0.1, 0.3, 3.0]),
    st.sampled_from([0.0, 1e-3, 0.1]),
)
def test_the_kernel_is_fixed_share_toward_the_prior_with_a_chosen_threshold(
    members: tuple[list[list[float]], list[str]], data: st.DataObject, cost: bool, eta: float, alpha: float
) -> None:
    S, groups = members
    ys = data.draw(st.lists(st.sampled_from([-1, 1]), min_size=len(S), max_size=len(S)))
    prior = group_prior(groups)
    log_w, mistakes = np.log(prior), np.zeros((len(THRESHOLDS), 2), dtype=np.int64)
    scores = np.array(S)
    signs = np.where(scores >= 0.0, 1, -1).astype(np.int8)
    args = (log_w, np.zeros(2, dtype=np.int64), mistakes, signs, scores, np.array(ys))
    got = hedge_steps(*args, cost, 0.5, 0.9, eta, alpha, prior)
    want, want_w = fixed_share(S, ys, list(prior), cost, 0.9, eta, alpha)
    # a vote within rounding of a threshold may fall either side of it, and the thresholds' counts
    # with it: rows are compared up to the first such vote (the weights do not read the votes)
    near = [
        i for i, v in enumerate(want) if any(abs(v + th - t) <= 1e-9 for th in THRESHOLDS for t in THRESHOLDS)
    ]
    upto = near[0] if near else len(want)
    assert np.allclose(got[:upto], np.array(want)[:upto], rtol=0.0, atol=1e-9)
    assert HEDGE_THRESHOLDS.tolist() == THRESHOLDS
    assert int(mistakes.sum()) <= len(THRESHOLDS) * len(ys)
    w = np.exp(log_w)
    assert np.allclose(w / w.sum(), np.array(want_w) / sum(want_w), rtol=0.0, atol=1e-9)
    assert math.isclose(float(w.sum()), 1.0, rel_tol=1e-9)
    assert all(float(wk) >= alpha * float(pk) * (1.0 - 1e-9) for wk, pk in zip(w, prior, strict=True))


def test_the_threshold_is_the_leader_over_the_thresholds_and_ties_go_to_zero() -> None:
    """Before any label every threshold ties and 0 is chosen; after positives the vote scored at
    -0.3, the thresholds below -0.3 (-0.4) are the only ones that caught them."""
    counts, mistakes = np.zeros(2, dtype=np.int64), np.zeros((len(THRESHOLDS), 2), dtype=np.int64)
    assert chosen_threshold(counts, mistakes, False, 0.5, 0.9) == 0
    log_w, prior = np.log(np.array([1.0])), np.array([1.0])
    S = np.array([[-0.3]] * 5 + [[-0.9]] * 5)
    ys = np.array([1] * 5 + [-1] * 5)
    got = hedge_steps(log_w, counts, mistakes, np.where(S >= 0, 1, -1).astype(np.int8), S, ys,
                      False, 0.5, 0.9, 0.1, 1e-3, prior)  # fmt: skip
    assert got[0] == -0.3  # theta = 0 before any label
    assert got[1] == -0.3 + 0.4  # -0.4 caught the first positive, the others did not
    assert mistakes[1].tolist() == [0, 0] and mistakes[0].tolist() == [5, 0]
    assert chosen_threshold(counts, mistakes, False, 0.5, 0.9) == THRESHOLDS.index(-0.4)


def test_the_defaults_start_with_equal_mass_per_family_and_input_form() -> None:
    """At d = 5: linear ACOG and ACOG-diag (10 members) and the forest (1) over each of two input
    forms, and the nearest neighbours over the standardised one: 7 groups of 1/7 each, before any
    label; the first vote is the prior's."""
    learner = ModelConfig(n_features=5).build_learner()
    weights = [m["weight"] for m in learner.member_objectives()]
    by_group: dict[tuple[str, str], float] = {}
    for m, w in zip(learner.member_objectives(), weights, strict=True):
        by_group[(m["algorithm"], m["input"])] = by_group.get((m["algorithm"], m["input"]), 0.0) + w
    assert len(by_group) == 7
    assert all(math.isclose(v, 1.0 / 7.0, rel_tol=1e-12) for v in by_group.values())
    forest = [w for m, w in zip(learner.member_objectives(), weights, strict=True) if m["algorithm"] == "amf"]
    linear = [
        w for m, w in zip(learner.member_objectives(), weights, strict=True) if m["algorithm"] == "acog"
    ]
    assert forest and linear and math.isclose(forest[0], 10.0 * linear[0], rel_tol=1e-12)
    row = np.array([1 if m["algorithm"] in ("amf", "knn") else -1 for m in learner.member_objectives()])
    assert math.isclose(
        float(hedge_vote(learner._vote_state.log_w, row.astype(np.float64))),
        3.0 / 7.0 - 4.0 / 7.0,
        abs_tol=1e-12,
    )


def test_a_state_written_before_the_thresholds_loads_with_none_counted() -> None:
    """A checkpoint of the vote without thresholds (no ``hedge_threshold_mistakes``) loads: the same
    weights, the thresholds' counts from zero; a malformed entry is refused before anything changes."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(120, 5)), np.where(rng.random(120) < 0.3, 1, -1)
    learner = ModelConfig(n_features=5).build_learner()
    for i in range(100):
        learner.learn(X[i], int(y[i]))
    state = learner.to_state()
    assert state["hedge_threshold_mistakes"].sum() > 0
    old = {k: v for k, v in state.items() if k != "hedge_threshold_mistakes"}
    restored = ModelConfig(n_features=5).build_learner()
    restored.load_state(old)
    assert np.array_equal(restored.to_state()["hedge_log_w"], state["hedge_log_w"])
    assert not restored.to_state()["hedge_threshold_mistakes"].any()
    bad = {**state, "hedge_threshold_mistakes": np.zeros((3, 2), dtype=np.int64)}
    with pytest.raises(InvalidInput, match="hedge_threshold_mistakes"):
        restored.load_state(bad)
    assert not restored.to_state()["hedge_threshold_mistakes"].any()  # unchanged
    for i in range(100, 120):  # and it learns on: the same weights, its own thresholds
        restored.learn(X[i], int(y[i]))
