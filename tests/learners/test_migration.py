"""A declared schema migration carried through every learner (service.learners.migration)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.learners import ALGORITHMS, InvalidParameter, create
from service.learners.migration import MIGRATORS, FeatureMigration, marginal_sketch, migrate

from .streams import NAMES, params_for, sparse_stream

D = 9
# old 0..8 -> new: 2, 0, 5, 7 survive (in that order), then three augmented; 1, 3, 4, 6, 8 vanish
MOVE = FeatureMigration.from_indices(D, [2, 0, 5, 7], 3)


def trained(name: str, **overrides: object) -> object:
    X, y = sparse_stream(200, D, density=0.6, seed=3)
    learner = create(name, n_features=D, **params_for(name, **overrides))
    learner.run(X, y)
    return learner


NO_MIGRATION = {"quadratic", "fogd", "nogd", "amf", "knn"}  # a map, boxes, stored rows: on their input schema
PLAIN = [name for name in NAMES if name != "opid" and name not in NO_MIGRATION]  # OPID: test_opid_learner


def test_every_algorithm_declares_how_it_migrates() -> None:
    own = {name for name, cls in ALGORITHMS.items() if hasattr(cls, "migrate_schema")}
    assert set(MIGRATORS) == set(ALGORITHMS) - own - NO_MIGRATION
    assert {"opid", "sdrogd", "pegasos"} <= own


@pytest.mark.parametrize("name", PLAIN)
@pytest.mark.parametrize("intercept", [False, True])
def test_survived_weights_are_kept_new_ones_zero_vanished_dropped(name: str, intercept: bool) -> None:
    old = trained(name, fit_intercept=intercept)
    new = old.migrate(MOVE)  # the contract's method
    assert new.n_features == MOVE.n_new and new.algorithm == old.algorithm
    w_old, w_new = old.weights(), new.weights()
    src = MOVE.over_dims(intercept)
    np.testing.assert_allclose(w_new[src >= 0], w_old[src[src >= 0]], rtol=1e-12, atol=1e-14)
    assert np.array_equal(w_new[src < 0], np.zeros(int(np.sum(src < 0))))
    assert np.array_equal(new.to_state()["counts"], old.to_state()["counts"])


@pytest.mark.parametrize("name", PLAIN)
def test_a_survivors_only_input_scores_as_before_and_learning_continues(name: str) -> None:
    old = trained(name)
    new = migrate(old, MOVE)
    values = np.array([0.5, -0.3, 0.7, 0.4])  # pairs: a presence learner (oli2ds) sees only these
    x_old = (np.array([2, 0, 5, 7]), values)
    x_new = (np.arange(4), values)
    assert new.score(x_new) == pytest.approx(old.score(x_old), rel=1e-12, abs=1e-14)
    X, y = sparse_stream(50, MOVE.n_new, density=0.6, seed=9)
    result = new.run(X, y)
    assert np.isfinite(result.scores).all()


@pytest.mark.parametrize("name", PLAIN)
def test_the_old_learner_is_left_as_it_was_and_migration_is_deterministic(name: str) -> None:
    old = trained(name)
    before = old.to_state()
    a, b = migrate(old, MOVE), migrate(old, MOVE)
    for key, value in before.items():
        assert np.array_equal(np.asarray(value), np.asarray(old.to_state()[key]))
    for key, value in a.to_state().items():
        assert np.array_equal(np.asarray(value), np.asarray(b.to_state()[key]))


@pytest.mark.parametrize("name", PLAIN)
def test_the_identity_migration_changes_no_bit(name: str) -> None:
    old = trained(name)
    same = migrate(old, FeatureMigration.from_indices(D, list(range(D)), 0))
    X, y = sparse_stream(60, D, density=0.6, seed=4)
    if name not in ("sacog", "ssacog", "romma"):  # sketches in SVD form, ROMMA's w materialised: other bits
        for key, value in old.to_state().items():
            assert np.array_equal(np.asarray(value), np.asarray(same.to_state()[key])), key
        assert np.array_equal(old.run(X, y).scores, same.run(X, y).scores)
    else:
        np.testing.assert_allclose(old.run(X, y).scores, same.run(X, y).scores, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", ["acog", "arow"])
def test_the_covariance_is_marginalised_onto_the_survivors(name: str) -> None:
    old, new = trained(name), None
    new = migrate(old, MOVE)
    sigma_old, sigma_new = old.to_state()["sigma"], new.to_state()["sigma"]
    S_old, S_new, A = MOVE.survived_old, MOVE.survived_new, MOVE.augmented_new
    assert np.array_equal(sigma_new[np.ix_(S_new, S_new)], sigma_old[np.ix_(S_old, S_old)])
    assert np.array_equal(sigma_new[np.ix_(A, A)], np.eye(A.size))
    assert not sigma_new[np.ix_(S_new, A)].any()


def _sketch_sigma(name: str, learner: object) -> np.ndarray:
    s = learner.to_state()
    if name == "sacog":
        V, t = s["V"], float(s["t"][0])
    else:
        V, t = s["F"] @ s["ZT"].T, float(s["clock"][0])
    coef = t * s["lam"] / (1.0 + t * s["lam"])
    return np.eye(V.shape[1]) - V.T @ (coef[:, None] * V)


@pytest.mark.parametrize("name", ["sacog", "ssacog"])
def test_a_sketch_becomes_the_sketch_of_the_marginal_covariance(name: str) -> None:
    old = trained(name)
    new = migrate(old, MOVE)
    sigma_old, sigma_new = _sketch_sigma(name, old), _sketch_sigma(name, new)
    S_old, S_new, A = MOVE.survived_old, MOVE.survived_new, MOVE.augmented_new
    np.testing.assert_allclose(sigma_new[np.ix_(S_new, S_new)], sigma_old[np.ix_(S_old, S_old)], atol=1e-10)
    np.testing.assert_allclose(sigma_new[np.ix_(A, A)], np.eye(A.size), atol=1e-10)
    np.testing.assert_allclose(sigma_new[np.ix_(S_new, A)], 0.0, atol=1e-10)
    V = new.to_state()["V"] if name == "sacog" else new.to_state()["ZT"].T
    np.testing.assert_allclose(V @ V.T, np.eye(V.shape[0]), atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 5),
    n_old=st.integers(5, 12),
    seed=st.integers(0, 2**32 - 1),
    keep=st.floats(0.0, 1.0),
    n_aug=st.integers(0, 4),
)
def test_marginal_sketch_is_exact(m: int, n_old: int, seed: int, keep: float, n_aug: int) -> None:
    rng = np.random.default_rng(seed)
    V = np.linalg.qr(rng.normal(size=(n_old, m)))[0].T
    coef = rng.random(m) * 0.99
    survived = [i for i in range(n_old) if rng.random() < keep]
    if len(survived) + n_aug < m:
        return  # a sketch needs at least m coordinates (refused by the learner)
    move = FeatureMigration.from_indices(n_old, survived, n_aug)
    new_V, new_coef = marginal_sketch(V, coef, move.source, move.n_new)
    sigma = np.eye(n_old) - V.T @ (coef[:, None] * V)
    sigma_new = np.eye(move.n_new) - new_V.T @ (new_coef[:, None] * new_V)
    S = move.survived_new
    np.testing.assert_allclose(
        sigma_new[np.ix_(S, S)], sigma[np.ix_(move.survived_old, move.survived_old)], atol=1e-10
    )
    assert new_V.shape == (m, move.n_new)
    np.testing.assert_allclose(new_V @ new_V.T, np.eye(m), atol=1e-10)
    assert ((new_coef >= 0) & (new_coef < 1)).all()


def test_the_ensemble_migrates_every_member_and_keeps_its_track_record() -> None:
    old = create("acog", n_features=D, eta="auto", loss="auto", rho="laplace")
    X, y = sparse_stream(200, D, density=0.6, seed=3)
    old.run(X, y)
    new = migrate(old, MOVE)
    assert new.n_features == MOVE.n_new and len(new.members) == len(old.members)
    assert new.leader() == old.leader()
    assert np.array_equal(new.to_state()["member_counts"], old.to_state()["member_counts"])
    for a, b in zip(old.members, new.members, strict=True):
        np.testing.assert_allclose(b.weights()[:4], a.weights()[[2, 0, 5, 7]])
    assert old.members[0].n_features == D  # the old ensemble is untouched


def test_from_names_matches_by_name() -> None:
    move = FeatureMigration.from_names(["a", "b", "c", "d"], ["c", "x", "a"])
    assert move.source.tolist() == [2, -1, 0]
    assert move.vanished_old.tolist() == [1, 3]
    assert move.augmented_new.tolist() == [1]
    assert FeatureMigration.from_json(move.to_json()).source.tolist() == [2, -1, 0]


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: FeatureMigration(3, np.array([0, 0])), "source"),
        (lambda: FeatureMigration(3, np.array([3])), "source"),
        (lambda: FeatureMigration(3, np.array([], dtype=np.int64)), "source"),
        (lambda: FeatureMigration(0, np.array([-1])), "n_old"),
        (lambda: FeatureMigration.from_names(["a", "a"], ["a"]), "feature_names"),
        (lambda: FeatureMigration.from_indices(3, [0], -1), "n_augmented"),
    ],
)
def test_bad_migrations_are_refused_naming_the_field(make: object, field: str) -> None:
    with pytest.raises(InvalidParameter) as err:
        make()
    assert err.value.parameter == field


def test_a_migration_from_another_schema_or_too_small_for_the_sketch_is_refused() -> None:
    with pytest.raises(InvalidParameter, match="starts from 4 features"):
        migrate(trained("acog"), FeatureMigration.from_indices(4, [0], 1))
    with pytest.raises(InvalidParameter, match="sketch_size"):
        migrate(trained("sacog"), FeatureMigration.from_indices(D, [0], 1))  # sketch of 3 > 2 features


@pytest.mark.parametrize("name", sorted(NO_MIGRATION))
def test_a_feature_map_learner_refuses_a_schema_migration_by_name(name: str) -> None:
    with pytest.raises(InvalidParameter) as info:
        create(name, D).migrate(MOVE)
    assert info.value.parameter == "algorithm"
