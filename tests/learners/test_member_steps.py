"""The ensemble steps the members of one class over one input form in one compiled call
(``MemberSteps``, ``Entries.learn_many``): every member ends in the bits of its own one-call-each
round, its outcome is that round's, and the typed list the call reads is built again whenever a
member's state is replaced.

The reference steps each member on its own (``learn_kernel``, or ``learn_checked`` for a member whose
round is its own), as the ensemble did before the grouped path.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.learners import EtaGrid
from service.learners.base import Learner, read_only
from service.learners.errors import StateBorrowed
from service.learners.inputs import canonical
from service.learners.member_steps import GROUP_WIDTH, MemberSteps, Outcomes
from service.model_config import ModelConfig

from .streams import DEFAULT_ROSTERS, default_roster, sparse_stream

ROSTERS = DEFAULT_ROSTERS
built = default_roster


def one_by_one(members: list[Learner], kernels: dict[str, Any], forms: list[str], label: int) -> Outcomes:
    out = Outcomes.empty(len(members))
    for k, (member, form) in enumerate(zip(members, forms, strict=True)):
        if type(member).learn_checked is Learner.learn_checked:
            out.put(k, member.learn_kernel(kernels[form], label))
        else:
            info = member.learn_checked(kernels[form], label)
            out.put(k, (info.score, info.loss, info.updated, info.rho))
    return out


def assert_same_members(a: list[Learner], b: list[Learner]) -> None:
    for m, n in zip(a, b, strict=True):
        for x, y in zip(m._flat, n._flat, strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)


@settings(max_examples=20, deadline=None)
@given(roster=st.sampled_from(sorted(ROSTERS)), seed=st.integers(0, 2**16), labels=st.integers(1, 60))
def test_grouped_steps_give_every_member_the_bits_of_its_own_round(
    roster: str, seed: int, labels: int
) -> None:
    learner = built(roster)
    d = learner.n_features
    members, reference = learner.members, copy.deepcopy(learner.members)
    steps = MemberSteps(members, learner.member_forms)
    grouped = sum(len(g.ks) for g in steps._groups)
    assert grouped + len(steps.alone) == len(members)
    assert grouped == sum(name not in ("amf", "knn") for name in learner.member_algorithms)
    X, y = sparse_stream(labels, d, density=0.5, seed=seed)
    for i in range(labels):
        kernels = learner._unchecked_kernels(canonical(X[i], d), learn=True)
        out = Outcomes.empty(len(members))
        steps.step(members, kernels, int(y[i]), out)
        expected = one_by_one(reference, kernels, learner.member_forms, int(y[i]))
        for got, want in zip(out, expected, strict=True):
            assert np.array_equal(got, want, equal_nan=True)
    assert_same_members(members, reference)


def test_a_group_is_built_again_once_a_member_state_is_replaced() -> None:
    """``load_state`` gives a member new arrays: the next round steps those, not the old ones."""
    learner, twin = built("wide, one call"), built("wide, one call")
    X, y = sparse_stream(60, 80, density=0.2, seed=5)
    for i in range(30):
        learner.learn(X[i], int(y[i]))
    twin.learn(X[0], int(y[0]))
    group = twin._steps._groups[0].group
    assert group is not None
    twin.load_state(learner.to_state())  # new arrays for every member of the twin
    assert twin._steps._groups[0].group is None  # the old arrays are let go at once
    for i in range(30, 60):
        assert learner.learn(X[i], int(y[i])) == twin.learn(X[i], int(y[i]))
    assert twin._steps._groups[0].group is not group
    assert_same_members(learner.members, twin.members)
    assert np.array_equal(learner._vote_state.log_w, twin._vote_state.log_w)


def test_groups_are_a_class_and_a_form_at_most_group_width_wide() -> None:
    learner = built("more than one call")
    steps = learner._steps
    assert [len(g.ks) for g in steps._groups] == [GROUP_WIDTH, 18 - GROUP_WIDTH]
    for g in steps._groups:
        assert len({(type(learner.members[k]), learner.member_forms[k]) for k in g.ks}) == 1


def test_a_borrowed_member_refuses_the_round_before_any_member_steps() -> None:
    """A borrow taken after the group was built still refuses the round (nothing stepped), and once
    it is given back the rounds go on as a learner's that was never lent."""
    learner, twin = built("wide, one call"), built("wide, one call")
    X, y = sparse_stream(3, 80, density=0.2, seed=1)
    for one in (learner, twin):
        one.learn(X[0], int(y[0]))
    before = copy.deepcopy(learner.members)
    with learner.members[3].borrowed_state(), pytest.raises(StateBorrowed):
        learner.learn(X[1], int(y[1]))
    assert_same_members(learner.members, before)
    for i in (1, 2):
        assert learner.learn(X[i], int(y[i])) == twin.learn(X[i], int(y[i]))
    assert_same_members(learner.members, twin.members)


def test_records_not_of_one_type_step_one_by_one_with_the_same_bits() -> None:
    """A member whose params record differs in type from its group's (an int where the others hold a
    float) cannot share the typed list: its group steps a call each, the same rounds."""
    learner = built("wide, one call")
    odd = learner.members[2]
    assert odd._flat_params[0] == 3.0  # eta
    odd._flat_params = (3, *odd._flat_params[1:])
    reference = copy.deepcopy(learner.members)
    X, y = sparse_stream(20, 80, density=0.2, seed=2)
    for i in range(20):
        kernels = learner._unchecked_kernels(canonical(X[i], 80), learn=True)
        out = Outcomes.empty(len(learner.members))
        learner._steps.step(learner.members, kernels, int(y[i]), out)
        expected = one_by_one(reference, kernels, learner.member_forms, int(y[i]))
        for got, want in zip(out, expected, strict=True):
            assert np.array_equal(got, want, equal_nan=True)
    assert learner._steps._groups[0].group is None
    assert_same_members(learner.members, reference)


def test_a_copy_steps_its_own_members() -> None:
    """pickle and deepcopy leave the typed list (it holds the original's arrays) behind: the copy
    builds its own, and learning on the copy changes nothing of the original."""
    import pickle

    learner = built("wide, one call")
    X, y = sparse_stream(40, 80, density=0.2, seed=7)
    for i in range(20):
        learner.learn(X[i], int(y[i]))
    frozen = copy.deepcopy(learner.members)
    for twin in (pickle.loads(pickle.dumps(learner)), copy.deepcopy(learner)):
        for i in range(20, 40):
            twin.learn(X[i], int(y[i]))
        assert_same_members(learner.members, frozen)
    for i in range(20, 40):
        learner.learn(X[i], int(y[i]))
    assert_same_members(learner.members, twin.members)


def test_a_read_only_vector_steps_a_call_each_with_the_same_bits() -> None:
    """The raw input without an intercept reaches the members as it is, read-only when it is a label
    log's example: the group steps a call each (the grouped step is compiled for writable vectors
    only), the same rounds as a writable copy stepped together."""
    config = ModelConfig(n_features=80, normalize="none", fit_intercept=False)
    learner, twin = config.build_learner(), config.build_learner()
    assert isinstance(learner, EtaGrid) and isinstance(twin, EtaGrid)
    assert set(learner.member_forms) == {"raw"} and len(learner._steps._groups) == 1
    X, y = sparse_stream(30, 80, density=0.2, seed=4)
    for i in range(30):
        idx, val = canonical(X[i], 80)
        frozen = (read_only(idx), read_only(val))
        assert learner.learn_unchecked(frozen, int(y[i])) == twin.learn_unchecked((idx, val), int(y[i]))
    assert learner._steps._groups[0].epoch == -1  # never built: every round stepped a call each
    assert twin._steps._groups[0].group is not None
    assert_same_members(learner.members, twin.members)
