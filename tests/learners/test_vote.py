"""The ensemble's vote scores its linear members in one compiled call (``linear_scores``): the
scores it votes with are every member's own ``score_checked``, bit for bit, whatever the roster, and
``predict_unchecked`` gives its sign.

The reference asks each member on its own, as the vote did before the one-call path; both rows go
through the same ``hedge_vote``, so the assertions are on the scores the vote reads.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from service.learners import EtaGrid, create
from service.learners.feature_maps import quadratic_scores
from service.learners.first_order import LINEAR_SCORES_WIDTH, linear_scores
from service.learners.hedge import hedge_vote
from service.learners.inputs import canonical
from service.learners.migration import FeatureMigration, migrate

from .streams import DEFAULT_ROSTERS, default_roster, sparse_stream

ROSTERS = DEFAULT_ROSTERS
built = default_roster


def reference_row(learner: EtaGrid, vector: Any) -> np.ndarray:
    kernels = learner._kernel_vectors(learner.inputs.vectors_unchecked(vector))
    pairs = zip(learner.members, learner.member_forms, strict=True)
    return np.array([m.score_checked(kernels[f]) for m, f in pairs])


@settings(max_examples=25, deadline=None)
@given(
    roster=st.sampled_from(sorted(ROSTERS)),
    seed=st.integers(0, 2**16),
    labels=st.integers(0, 60),
)
def test_the_vote_reads_every_member_own_score(roster: str, seed: int, labels: int) -> None:
    learner = built(roster)
    d = learner.n_features
    X, y = sparse_stream(labels + 20, d, density=0.5, seed=seed)
    for i in range(labels):
        learner.learn(X[i], int(y[i]))
    in_calls = sum(name not in ("amf", "knn") for name in learner.member_algorithms)  # linear, quadratic
    assert sum(len(call.ks) for call in learner._scores.calls) == in_calls
    for i in range(labels, labels + 20):
        vector = canonical(X[i], d)
        row = reference_row(learner, vector)
        vote = float(hedge_vote(learner._vote_state.log_w, row)) - learner._threshold()
        assert learner.score_unchecked(vector) == vote
        assert learner.score(X[i]) == vote
        # a challenger's shadow label
        assert learner.predict_unchecked(vector) == (1 if vote >= 0.0 else -1)


def test_only_a_roster_of_linear_members_over_l2_alone_votes_in_one_call() -> None:
    """``l2_vote`` serves the roster whose members are all linear, over the L2 form, in one call;
    its vote is the vote of the calls it replaces, also once ``load_state`` replaced the members."""
    assert {name for name in ROSTERS if built(name)._scores.l2_linear is not None} == {"wide, one call"}
    learner, twin = built("wide, one call"), built("wide, one call")
    X, y = sparse_stream(80, 80, density=0.2, seed=3)
    for i in range(40):
        learner.learn(X[i], int(y[i]))
    twin.load_state(learner.to_state())
    for model in (learner, twin):
        for i in range(40, 80):
            vector = canonical(X[i], 80)
            vote = model._scores.l2_vote(model.members, vector, model._vote_state.log_w)
            assert vote is not None
            assert vote - model._threshold() == model._vote(model._unchecked_kernels(vector))
            assert model.score_unchecked(vector) == vote - model._threshold()
    assert learner._scores.l2_vote(learner.members, canonical(X[0], 80), learner._vote_state.log_w) == (
        twin._scores.l2_vote(twin.members, canonical(X[0], 80), twin._vote_state.log_w)
    )


def test_calls_hold_at_most_the_width_and_every_member_once() -> None:
    learner = built("more than one call")
    linear = [k for call in learner._scores.calls for k in call.ks]
    alone = [k for k, _ in learner._scores.alone]
    assert [len(call.ks) for call in learner._scores.calls] == [LINEAR_SCORES_WIDTH, 18 - LINEAR_SCORES_WIDTH]
    assert sorted(linear + alone) == list(range(len(learner.members)))
    for call in learner._scores.calls:
        assert call.at.tolist() == call.ks


@settings(max_examples=50, deadline=None)
@given(
    weights=st.lists(st.lists(st.floats(-1e6, 1e6), min_size=5, max_size=5), min_size=1, max_size=16),
    values=st.lists(st.floats(-1e3, 1e3), min_size=5, max_size=5),
)
def test_linear_scores_is_each_dot_product_in_index_order(
    weights: list[list[float]], values: list[float]
) -> None:
    ws = tuple(np.array(w) for w in weights)
    idx, val = np.arange(5), np.array(values)
    out = np.zeros(len(ws) + 3)
    at = np.arange(3, 3 + len(ws))
    linear_scores(ws + ws[:1] * (LINEAR_SCORES_WIDTH - len(ws)), len(ws), idx, val, at, out)
    for k, w in enumerate(ws):
        total = 0.0
        for j in range(5):
            total += w[j] * val[j]
        assert out[3 + k] == total
    assert not out[:3].any()  # only the positions in `at` are written


def test_a_migrated_ensemble_votes_with_every_member_own_score() -> None:
    """A schema migration replaces the members (the quadratic family on a new layout): the calls
    read the new members' weights and layout, so the vote still reads each member's own score."""
    learner = built("every family")
    X, y = sparse_stream(60, 6, density=0.6, seed=5)
    for i in range(40):
        learner.learn(X[i], int(y[i]))
    migrated = migrate(learner, FeatureMigration.from_indices(6, [0, 2, 3, 5], 3))
    assert isinstance(migrated, EtaGrid) and migrated.n_features == 7
    X7, y7 = sparse_stream(20, 7, density=0.6, seed=6)
    for i in range(20):
        vector = canonical(X7[i], 7)
        vote = float(hedge_vote(migrated._vote_state.log_w, reference_row(migrated, vector)))
        assert migrated.score_unchecked(vector) == vote - migrated._threshold()
        migrated.learn(X7[i], int(y7[i]))


def test_the_vote_reads_the_weights_of_a_loaded_state_and_a_copy_its_own() -> None:
    """The weight vectors each call reads are kept between predictions: loading a state (new arrays)
    and a deep copy (arrays of its own) must each vote with the weights they now hold."""
    learner, other = built("every family"), built("every family")
    X, y = sparse_stream(80, 6, density=0.6, seed=7)
    for i in range(30):
        learner.learn(X[i], int(y[i]))
        other.learn(X[79 - i], int(y[79 - i]))
    probe = [canonical(X[i], 6) for i in range(30, 40)]
    before = [learner.score_unchecked(v) for v in probe]  # the calls keep these weights
    copy = deepcopy(learner)
    learner.load_state(other.to_state())
    for v in probe:
        vote = float(hedge_vote(learner._vote_state.log_w, reference_row(learner, v))) - learner._threshold()
        assert learner.score_unchecked(v) == vote == other.score_unchecked(v)
    assert [copy.score_unchecked(v) for v in probe] == before
    copy.learn(X[40], int(y[40]))  # the copy's rounds change the copy's weights, not another's
    assert [other.score_unchecked(v) for v in probe] == [learner.score_unchecked(v) for v in probe]
    vote = float(hedge_vote(copy._vote_state.log_w, reference_row(copy, probe[0]))) - copy._threshold()
    assert copy.score_unchecked(probe[0]) == vote


@settings(max_examples=30, deadline=None)
@given(d=st.integers(1, 8), members=st.integers(1, 16), seed=st.integers(0, 2**16), intercept=st.booleans())
def test_quadratic_scores_is_each_member_own_score(d: int, members: int, seed: int, intercept: bool) -> None:
    learners = [
        create("quadratic", d, eta=0.1 * (k + 1), fit_intercept=intercept, update="acog" if k % 2 else "ogd")
        for k in range(members)
    ]
    X, y = sparse_stream(30, d, density=0.7, seed=seed)
    for i in range(20):
        for learner in learners:
            learner.learn(X[i], int(y[i]))
    for i in range(20, 30):
        idx, val = learners[0].kernel_vector(canonical(X[i], d))
        out = np.full(members + 2, np.nan)
        ws = tuple(m.live_weights() for m in learners)
        padded = ws + ws[:1] * (LINEAR_SCORES_WIDTH - members)
        quadratic_scores(padded, members, learners[0].live_layout(), idx, val, np.arange(2, 2 + members), out)
        assert np.isnan(out[:2]).all()  # only the positions in `at` are written
        assert out[2:].tolist() == [m.score_checked((idx, val)) for m in learners]
