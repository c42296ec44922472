"""The Fixed-Share vote (:mod:`service.learners.hedge`): its prior over the roster and its update,
checked against a plain-Python transcription of the equations."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from service.learners.hedge import group_prior, hedge_steps, hedge_vote
from service.model_config import ModelConfig


def fixed_share(P: list[list[int]], ys: list[int], prior: list[float], cost: bool, c_p: float,
                eta: float, alpha: float) -> tuple[list[float], list[float]]:  # fmt: skip
    """The votes before each label and the final weights, by the equations of the module docstring."""
    w = list(prior)
    t_p = t_n = 0
    votes = []
    for row, y in zip(P, ys, strict=True):
        votes.append(sum(wk * p for wk, p in zip(w, row, strict=True)) / sum(w))
        c = (
            (c_p if y == 1 else 1.0 - c_p)
            if cost
            else 1.0 - ((t_p if y == 1 else t_n) + 1.0) / (t_p + t_n + 2.0)
        )
        w = [wk * math.exp(-eta * c * (p != y)) for wk, p in zip(w, row, strict=True)]
        z = sum(w)
        w = [(1.0 - alpha) * wk / z + alpha * pk for wk, pk in zip(w, prior, strict=True)]
        t_p, t_n = t_p + (y == 1), t_n + (y != 1)
    return votes, w


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
            st.lists(st.lists(st.sampled_from([-1, 1]), min_size=k, max_size=k), min_size=1, max_size=40),
            st.lists(st.sampled_from(["x", "y", "z"]), min_size=k, max_size=k),
        )
    ),
    st.data(),
    st.booleans(),
    st.sampled_from([0.1, 0.3, 3.0]),
    st.sampled_from([0.0, 1e-3, 0.1]),
)
def test_the_kernel_is_fixed_share_toward_the_prior(
    members: tuple[list[list[int]], list[str]], data: st.DataObject, cost: bool, eta: float, alpha: float
) -> None:
    P, groups = members
    ys = data.draw(st.lists(st.sampled_from([-1, 1]), min_size=len(P), max_size=len(P)))
    prior = group_prior(groups)
    log_w = np.log(prior)
    votes = hedge_steps(
        log_w,
        np.zeros(2, dtype=np.int64),
        np.array(P, dtype=np.int8),
        np.array(ys),
        cost,
        0.9,
        eta,
        alpha,
        prior,
    )
    want_votes, want_w = fixed_share(P, ys, list(prior), cost, 0.9, eta, alpha)
    assert np.allclose(votes, want_votes, rtol=0.0, atol=1e-9)
    w = np.exp(log_w)
    assert np.allclose(w / w.sum(), np.array(want_w) / sum(want_w), rtol=0.0, atol=1e-9)
    assert math.isclose(float(w.sum()), 1.0, rel_tol=1e-9)
    assert all(float(wk) >= alpha * float(pk) * (1.0 - 1e-9) for wk, pk in zip(w, prior, strict=True))


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
        float(hedge_vote(learner._log_w, row.astype(np.int8))), 3.0 / 7.0 - 4.0 / 7.0, abs_tol=1e-12
    )
