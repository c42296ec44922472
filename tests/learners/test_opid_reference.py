"""OPID's reference maths: the acceptance tests 1-4 of ``docs/learners.md`` §10.

Random problems are drawn by hypothesis (shapes, batch splits, hyper-parameters, a seed for the
numbers), so each property is checked over many shapes, not one hand-picked case.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from service.learners.opid.reference import (
    WeightedSums,
    WoodburyCStage,
    block_norms,
    c_stage_solve,
    e_stage_design,
    e_stage_fit,
    e_stage_fit_rows,
    e_stage_objective,
    prop1_system,
    prop4,
    stacked_least_squares,
)

FAST = settings(max_examples=40, deadline=None)


@dataclass
class Problem:
    X: np.ndarray  # n × d, the old features O
    Y: np.ndarray  # n × c
    positive: np.ndarray  # n booleans
    survived: np.ndarray
    cuts: list[int]  # batch boundaries
    lam: float
    ridge: float


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    n = draw(st.integers(2, 40))
    d = draw(st.integers(2, 12))
    c = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    survived = np.sort(rng.choice(d, size=draw(st.integers(1, d)), replace=False))
    cuts = sorted(set(draw(st.lists(st.integers(1, n - 1), max_size=5))))
    X = rng.normal(size=(n, d)) * rng.choice([0.0, 1.0], size=(n, d), p=[0.2, 0.8])
    Y = np.where(rng.random((n, c)) < 0.4, 1.0, -1.0)
    lam = draw(st.sampled_from([0.1, 1.0, 10.0]))
    ridge = draw(st.sampled_from([0.1, 1.0, 10.0]))
    return Problem(X, Y, Y[:, 0] > 0, survived, cuts, lam, ridge)


def batches(p: Problem) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    edges = [0, *p.cuts, p.X.shape[0]]
    return [(p.X[a:b], p.Y[a:b], p.positive[a:b]) for a, b in itertools.pairwise(edges)]


# --- 1. accumulation ------------------------------------------------------------------------


@FAST
@given(problems())
def test_per_example_and_per_batch_accumulation_give_the_same_solution(p: Problem) -> None:
    one, many = WeightedSums.empty(p.X.shape[1], p.Y.shape[1]), WeightedSums.empty(p.X.shape[1], p.Y.shape[1])
    for i in range(p.X.shape[0]):
        one.add(p.X[i : i + 1], p.Y[i : i + 1], p.positive[i : i + 1])
    for X, Y, pos in batches(p):
        many.add(X, Y, pos)
    a = c_stage_solve(one.gram, one.cross, p.survived, p.lam, p.ridge)
    b = c_stage_solve(many.gram, many.cross, p.survived, p.lam, p.ridge)
    np.testing.assert_allclose(a.W_survived, b.W_survived, rtol=0, atol=1e-10)


@FAST
@given(problems())
def test_prop1_equals_the_direct_stacked_least_squares_solve(p: Problem) -> None:
    sums = WeightedSums.empty(p.X.shape[1], p.Y.shape[1])
    sums.add(p.X, p.Y)
    ours = c_stage_solve(sums.gram, sums.cross, p.survived, p.lam, p.ridge)
    direct = stacked_least_squares(p.X, p.Y, p.survived, p.lam, p.ridge)
    np.testing.assert_allclose(ours.W_survived, direct.W_survived, rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours.W_full, direct.W_full, rtol=0, atol=1e-8)


# --- 2. assembly and the Woodbury inverse ---------------------------------------------------


def eq6_from_batches(p: Problem) -> tuple[np.ndarray, np.ndarray]:
    """A and B exactly as eqs. (5), (6) and (9) write them: block sums over the batches."""
    S, d = p.survived, p.X.shape[1]
    s = S.size
    A = p.ridge * np.eye(d + s)
    B = np.zeros((d + s, p.Y.shape[1]))
    for X, Y, _ in batches(p):
        Xs = X[:, S]
        A[:d, :d] += (1 + p.lam) * X.T @ X
        A[:d, d:] += -p.lam * X.T @ Xs
        A[d:, :d] += -p.lam * Xs.T @ X
        A[d:, d:] += (1 + p.lam) * Xs.T @ Xs
        B += np.vstack([X.T @ Y, Xs.T @ Y])
    return A, B


@FAST
@given(problems())
def test_A_assembled_from_G_and_H_equals_eq6_built_from_the_batches(p: Problem) -> None:
    sums = WeightedSums.empty(p.X.shape[1], p.Y.shape[1])
    for X, Y, pos in batches(p):
        sums.add(X, Y, pos)
    A, B = prop1_system(sums.gram, sums.cross, p.survived, p.lam, p.ridge)
    A6, B6 = eq6_from_batches(p)
    np.testing.assert_allclose(A, A6, rtol=0, atol=1e-10)
    np.testing.assert_allclose(B, B6, rtol=0, atol=1e-10)


@FAST
@given(problems())
def test_the_woodbury_inverse_equals_inv_A_after_every_batch(p: Problem) -> None:
    woodbury = WoodburyCStage(p.X.shape[1], p.survived, p.Y.shape[1], p.lam, p.ridge)
    sums = WeightedSums.empty(p.X.shape[1], p.Y.shape[1])
    for X, Y, pos in batches(p):
        woodbury.add(X, Y)
        sums.add(X, Y, pos)
        A, _ = prop1_system(sums.gram, sums.cross, p.survived, p.lam, p.ridge)
        exact = np.linalg.inv(A)
        scale = np.linalg.cond(A) * max(1.0, float(np.abs(exact).max()))
        np.testing.assert_allclose(woodbury.A_inv, exact, rtol=0, atol=1e-8 * scale)
    direct = c_stage_solve(sums.gram, sums.cross, p.survived, p.lam, p.ridge)
    np.testing.assert_allclose(woodbury.solution().W_survived, direct.W_survived, rtol=0, atol=1e-8)


# --- 3. the E-stage alternation -------------------------------------------------------------


@st.composite
def e_problems(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, float]:
    n = draw(st.integers(3, 60))
    c = draw(st.integers(1, 3))
    d_s = draw(st.integers(1, 8))
    d_a = draw(st.integers(1, 8))
    gamma = draw(st.sampled_from([1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    W = rng.normal(size=(d_s, c))
    M = e_stage_design(rng.normal(size=(n, d_s)), rng.normal(size=(n, d_a)), W)
    Y = np.where(rng.random((n, c)) < 0.5, 1.0, -1.0)
    return M, Y, c, gamma


@FAST
@given(e_problems())
def test_the_alternation_never_increases_J_and_keeps_w_on_the_simplex(case: tuple) -> None:
    M, Y, c, gamma = case
    fit = e_stage_fit_rows(M, Y, c, gamma)
    J = np.array(fit.objective)
    assert np.all(np.diff(J) <= 1e-12 * np.maximum(1.0, J[:-1]))
    assert abs(fit.w1 + fit.w2 - 1.0) <= 1e-15 and fit.w1 >= 0.0 and fit.w2 >= 0.0
    # J from the sums is the objective evaluated on the rows
    a, b = block_norms(fit.V, c)
    on_rows = float(np.sum((M @ fit.V - Y) ** 2)) + gamma * (a + b) ** 2
    assert abs(on_rows - J[-1]) <= 1e-8 * max(1.0, on_rows)


@FAST
@given(e_problems())
def test_prop3_weights_beat_every_point_of_a_grid(case: tuple) -> None:
    M, Y, c, gamma = case
    fit = e_stage_fit_rows(M, Y, c, gamma)
    a, b = block_norms(fit.V, c)
    grid = np.linspace(0.001, 0.999, 999)
    penalties = a**2 / grid + b**2 / (1 - grid)
    optimum = a**2 / fit.w1 + b**2 / fit.w2 if fit.w1 > 0 and fit.w2 > 0 else (a + b) ** 2
    assert optimum <= penalties.min() * (1 + 1e-12)
    assert abs(optimum - (a + b) ** 2) <= 1e-10 * max(1.0, optimum)


@FAST
@given(e_problems())
def test_the_alternation_reaches_the_joint_optimum(case: tuple) -> None:
    """J is jointly convex: no fixed (w₁, w₂) on a grid, with its own best V, does better."""
    M, Y, c, gamma = case
    MM, MY, YY = M.T @ M, M.T @ Y, float(np.sum(Y * Y))
    fit = e_stage_fit(MM, MY, YY, c, gamma)
    best_on_grid = min(
        e_stage_objective(MM, MY, YY, prop4(MM, MY, c, gamma, w, 1 - w), c, gamma)
        for w in np.linspace(0.02, 0.98, 49)
    )
    assert fit.objective[-1] <= best_on_grid * (1 + 1e-9) + 1e-12


# --- 4. cost weights ------------------------------------------------------------------------


@FAST
@given(problems())
def test_rho_one_gives_the_unweighted_solve_bit_for_bit(p: Problem) -> None:
    d, c = p.X.shape[1], p.Y.shape[1]
    weighted, plain = WeightedSums.empty(d, c), WeightedSums.empty(d, c)
    for X, Y, pos in batches(p):
        weighted.add(X, Y, pos)
        plain.add(X, Y)
    G, H, YY = weighted.weighted(1.0)
    assert np.array_equal(G, plain.gram) and np.array_equal(H, plain.cross) and plain.targets == YY
    a = c_stage_solve(G, H, p.survived, p.lam, p.ridge)
    b = c_stage_solve(plain.gram, plain.cross, p.survived, p.lam, p.ridge)
    assert np.array_equal(a.W_survived, b.W_survived)


@FAST
@given(problems(), st.sampled_from([0.25, 3.0, 9.0]))
def test_rho_weighs_every_positive_row_by_rho(p: Problem, rho: float) -> None:
    """``ρ G₊ + G₋`` is the Gram matrix of the rows with every positive row scaled by √ρ."""
    sums = WeightedSums.empty(p.X.shape[1], p.Y.shape[1])
    sums.add(p.X, p.Y, p.positive)
    G, H, _ = sums.weighted(rho)
    root = np.where(p.positive, np.sqrt(rho), 1.0)[:, None]
    direct = stacked_least_squares(root * p.X, root * p.Y, p.survived, p.lam, p.ridge)
    ours = c_stage_solve(G, H, p.survived, p.lam, p.ridge)
    np.testing.assert_allclose(ours.W_survived, direct.W_survived, rtol=0, atol=1e-8)
