"""The ``opid`` learner against its reference (service.learners.opid.reference), in both phases.

Phase C is also covered by the conformance suite (every registered algorithm); these tests add
the maths of each phase, the change, and the contract *after* a change (phase E), including the
recovery path: a fresh learner of the new schema loading a phase-E state.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from service.learners import InvalidInput, InvalidParameter, create
from service.learners.migration import FeatureMigration
from service.learners.opid import reference

from .streams import same_state, sparse_stream

D = 8
MOVE = FeatureMigration.from_indices(D, [6, 2, 3, 5], 3)  # 0, 1, 4, 7 vanish; 3 augmented


def stream(n: int, d: int, seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    return sparse_stream(n, d, density=0.6, seed=seed)


def rows_of(X: sp.csr_matrix, intercept: bool) -> np.ndarray:
    dense = X.toarray()
    return np.hstack([dense, np.ones((dense.shape[0], 1))]) if intercept else dense


def sums_of(X: np.ndarray, y: np.ndarray) -> reference.WeightedSums:
    sums = reference.WeightedSums.empty(X.shape[1])
    sums.add(X, y.astype(float), y > 0)
    return sums


@pytest.mark.parametrize("rho", [1.0, 4.0, "laplace"])
@pytest.mark.parametrize("intercept", [False, True])
def test_phase_c_is_ridge_least_squares_on_the_sums(rho: object, intercept: bool) -> None:
    X, y = stream(300, D, seed=1)
    learner = create("opid", D, rho=rho, fit_intercept=intercept)
    learner.run(X, y)
    state = learner.to_state()
    sums = sums_of(rows_of(X, intercept), y)
    np.testing.assert_allclose(state["gram"], sums.gram, atol=1e-10)
    np.testing.assert_allclose(state["gram_pos"], sums.gram_pos, atol=1e-10)
    np.testing.assert_allclose(state["cross"], sums.cross[:, 0], atol=1e-10)
    rho_u = float(state["rho_used"][0])
    G, H, _ = sums.weighted(rho_u)
    exact_inverse = np.linalg.inv(G + np.eye(G.shape[0]))
    np.testing.assert_allclose(state["inverse"], exact_inverse, atol=1e-9)
    np.testing.assert_allclose(learner.weights(), reference.ridge_weights(G, H)[:, 0], atol=1e-9)
    # the inverse is for a rho within the tolerance of the current one
    assert abs(rho_u - learner.rho) <= 0.05 * rho_u
    if rho != "laplace":
        assert rho_u == float(rho)


def trained_then_migrated(rho: object = "laplace", intercept: bool = True, n_e: int = 150):  # type: ignore[no-untyped-def]
    X, y = stream(400, D, seed=2)
    old = create("opid", D, rho=rho, fit_intercept=intercept)
    old.run(X, y)
    new = old.migrate(MOVE)
    Xe, ye = stream(n_e, MOVE.n_new, seed=3)
    return old, new, Xe, ye


def test_the_change_solves_prop1_with_the_current_rho_and_leaves_the_old_learner_alone() -> None:
    X, y = stream(400, D, seed=2)
    old = create("opid", D, rho="laplace", fit_intercept=True)
    old.run(X, y)
    before = old.to_state()
    new = old.migrate(MOVE)
    assert same_state(old.to_state(), before)
    G, H, _ = sums_of(rows_of(X, True), y).weighted(old.rho)
    survived = MOVE.over_dims(True)[MOVE.over_dims(True) >= 0]  # old coordinates, intercept last
    expected = reference.c_stage_solve(G, H, survived, 1.0, 1.0).W_survived[:, 0]
    np.testing.assert_allclose(new.to_state()["ws"], expected, atol=1e-10)
    facts = new.describe()["opid"]
    assert facts == {
        "phase": "E", "changes": 1, "labels_since_change": 0, "survived": 5, "augmented": 3,
        "refits": 0, "mix": [0.5, 0.5], "gamma": None,
    }  # fmt: skip
    assert new.n_features == MOVE.n_new and new.phase == "E" and old.phase == "C"


def test_until_the_first_refit_the_prediction_is_the_c_stage_model_on_the_survivors() -> None:
    _, new, Xe, ye = trained_then_migrated()
    ws = new.to_state()["ws"]
    result = new.run(Xe[:59], ye[:59])
    survivors = np.hstack([Xe[:59].toarray()[:, :4], np.ones((59, 1))])  # new 0..3 then the intercept
    np.testing.assert_allclose(result.scores, survivors @ ws, atol=1e-12)


@pytest.mark.parametrize("rho", [1.0, 3.0, "laplace"])
def test_phase_e_refits_every_60_labels_to_the_reference_alternation(rho: object) -> None:
    old, new, Xe, ye = trained_then_migrated(rho=rho, n_e=150)
    new.run(Xe[:120], ye[:120])
    state = new.to_state()
    ws = state["ws"]
    dense = rows_of(Xe[:120], True)
    S = np.r_[0:4, MOVE.n_new]  # survivors in ws order: new 0..3, then the intercept
    A = np.arange(4, MOVE.n_new)
    A = np.r_[A, MOVE.n_new]  # the intercept is also the E-stage's own bias column (the last)
    M = reference.e_stage_design(dense[:, S], dense[:, A], ws[:, None])
    Y, pos = ye[:120].astype(float), ye[:120] > 0
    sums = reference.WeightedSums.empty(M.shape[1])
    sums.add(M, Y, pos)
    np.testing.assert_allclose(state["mm"].sum(axis=0), sums.gram, atol=1e-10)
    # the refit at label 120 used the rho of that label (the counts before it)
    counts = old.to_state()["counts"] + np.array([np.sum(ye[:119] > 0), np.sum(ye[:119] < 0)])
    rho_now = 0.5 * (counts[1] + 1) / (0.5 * (counts[0] + 1)) if rho == "laplace" else float(rho)
    folds = []
    for f in range(5):  # label i since the change is in fold i mod 5
        fold = reference.WeightedSums.empty(M.shape[1])
        fold.add(M[f::5], Y[f::5], pos[f::5])
        folds.append(fold.weighted(rho_now))
    gamma, _ = reference.e_stage_cv(folds, 1)
    MM, MY, YY = sums.weighted(rho_now)
    fit = reference.e_stage_fit(MM, MY, YY, 1, gamma)
    assert state["mix"][2] == gamma == new.describe()["opid"]["gamma"]
    np.testing.assert_allclose(state["v"], fit.V[:, 0], atol=1e-8)
    np.testing.assert_allclose(state["mix"][:2], [fit.w1, fit.w2], atol=1e-8)
    later = rows_of(Xe[120:], True)
    M_later = reference.e_stage_design(later[:, S], later[:, A], ws[:, None])
    np.testing.assert_allclose(new.run(Xe[120:], ye[120:]).scores, M_later @ state["v"], atol=1e-10)


def test_a_fixed_gamma_skips_the_cross_validation() -> None:
    X, y = stream(300, D, seed=5)
    learner = create("opid", D, gamma=10.0, rho=1.0)
    learner.run(X, y)
    new = learner.migrate(MOVE)
    Xe, ye = stream(60, MOVE.n_new, seed=6)
    new.run(Xe, ye)
    s = new.to_state()
    fit = reference.e_stage_fit(s["mm"].sum(0), s["my"].sum(0)[:, None], float(s["yy"][:, 0].sum()), 1, 10.0)
    assert s["mix"][2] == 10.0
    np.testing.assert_allclose(s["v"], fit.V[:, 0], atol=1e-8)


def test_phase_e_keeps_the_contract() -> None:
    """run = learn row by row (state included), dense = pair = CSR, and the recovery path: a fresh
    learner of the new schema (phase C) loads the phase-E state and goes on bit for bit."""
    _, new, Xe, ye = trained_then_migrated()
    one = new.migrate(FeatureMigration.from_indices(MOVE.n_new, range(MOVE.n_new), 0))  # a 2nd change
    batch = create("opid", MOVE.n_new, rho="laplace", fit_intercept=True)
    batch.load_state(new.to_state())
    scores = np.array([new.learn(Xe[i], ye[i]).score for i in range(130)])
    assert np.array_equal(batch.run(Xe[:130], ye[:130]).scores, scores)
    assert same_state(batch.to_state(), new.to_state())
    pair = create("opid", MOVE.n_new, rho="laplace", fit_intercept=True)
    pair.load_state(one.to_state())
    dense = create("opid", MOVE.n_new, rho="laplace", fit_intercept=True)
    dense.load_state(one.to_state())
    for i in range(70):
        row = Xe[i]
        assert dense.learn(row.toarray().ravel(), ye[i]) == pair.learn((row.indices, row.data), ye[i])
    assert same_state(dense.to_state(), pair.to_state())


def test_a_second_change_starts_from_the_sums_kept_since_the_first() -> None:
    _, new, Xe, ye = trained_then_migrated()
    new.run(Xe, ye)
    second = FeatureMigration.from_indices(MOVE.n_new, [0, 4, 5], 2)
    again = new.migrate(second)
    sums = sums_of(rows_of(Xe, True), ye)
    G, H, _ = sums.weighted(new.rho)
    expected = reference.c_stage_solve(G, H, second.over_dims(True)[second.over_dims(True) >= 0]).W_survived
    np.testing.assert_allclose(again.to_state()["ws"], expected[:, 0], atol=1e-10)
    assert again.describe()["opid"]["changes"] == 2


def test_rho_one_gives_the_unweighted_change_bit_for_bit() -> None:
    X, y = stream(300, D, seed=4)
    learner = create("opid", D, rho=1.0)
    learner.run(X, y)
    s = learner.to_state()
    plain = reference.c_stage_solve(s["gram"], s["cross"][:, None], MOVE.survived_old)
    assert np.array_equal(learner.migrate(MOVE).to_state()["ws"], plain.W_survived[:, 0])


def test_a_corrupt_phase_e_state_is_refused_and_changes_nothing() -> None:
    _, new, _, _ = trained_then_migrated()
    fresh = create("opid", MOVE.n_new, rho="laplace", fit_intercept=True)
    before = fresh.to_state()
    state = new.to_state()
    for bad in (
        {**state, "role": np.zeros(MOVE.n_new + 1, np.int64)},  # two coordinates claim position 0
        {**state, "mm": np.zeros((5, 3, 3))},
        {**state, "ws": np.zeros(2)},
    ):
        with pytest.raises(InvalidInput) as info:
            fresh.load_state(bad)
        assert info.value.field == "state"
        assert same_state(fresh.to_state(), before)


def test_the_memory_budget_covers_three_dense_matrices() -> None:
    with pytest.raises(InvalidParameter, match="three dense") as info:
        create("opid", 1000, memory_budget=3 * 1000 * 1000 * 8 - 1)
    assert info.value.parameter == "n_features"
    assert create("opid", 999, memory_budget=3 * 1000 * 1000 * 8).state_nbytes() >= 3 * 999 * 999 * 8
    with pytest.raises(InvalidParameter, match="n_features"):  # the new schema is checked too
        create("opid", 10, memory_budget=3 * 11 * 11 * 8).migrate(FeatureMigration.from_indices(10, [0], 30))
    with pytest.raises(InvalidParameter, match="five folds"):  # and phase E's own sums
        create("opid", 10, memory_budget=3 * 11 * 11 * 8).migrate(FeatureMigration.from_indices(10, [0], 9))
