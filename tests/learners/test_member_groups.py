"""A roster stepped a chunk at a time (:mod:`service.learners.member_groups`) gives the bits of one
call per member, for every member kind, whole or leftover chunks, writable or read-only vectors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.learners import NONLINEAR_MAX_FEATURES
from service.learners.base import read_only
from service.learners.member_groups import CHUNK, MemberGroups
from service.model_config import ModelConfig


def roster(d: int, grid: list[float]) -> tuple[list, list[str]]:
    model = ModelConfig(n_features=d, eta_grid=grid).build_learner()
    return model.members, model.member_forms  # type: ignore[attr-defined]


def kernels_of(members: list, forms: list[str], x: np.ndarray, frozen: bool) -> dict:
    out = {}
    for k, form in enumerate(forms):
        if form not in out:
            idx, val = members[k].checked(x, 1)[0]
            out[form] = (read_only(idx), read_only(val)) if frozen else (idx, val)
    return out


@settings(max_examples=12, deadline=None)
@given(
    st.sampled_from([3, 6]),
    st.lists(st.sampled_from([0.3, 1.0, 3.0, 10.0, 30.0, 100.0]), min_size=1, max_size=6, unique=True),
    st.integers(0, 2**31 - 1),
    st.booleans(),
)
def test_chunks_score_and_learn_the_bits_of_one_call_per_member(
    d: int, grid: list[float], seed: int, frozen: bool
) -> None:
    members, forms = roster(d, grid)
    twins, _ = roster(d, grid)
    groups = MemberGroups(members, forms)
    assert sorted([k for c in groups.chunks for k in range(c.start, c.stop)] + groups.singles) == list(
        range(len(members))
    )
    rng = np.random.default_rng(seed)
    for _ in range(25):
        x = rng.normal(size=d)
        y = int(rng.choice([-1, 1]))
        kernels = kernels_of(members, forms, x, frozen)
        scores = np.empty(len(members))
        groups.score(kernels, scores)
        out = np.empty((len(members), 4))
        groups.learn(kernels, y, out)
        for k, twin in enumerate(twins):
            vector = kernels[forms[k]]
            assert scores[k] == twin.score_checked(vector) or np.isnan(scores[k])
            info = twin.learn_checked(vector, y)
            assert out[k].tolist() == [info.score, info.loss, float(info.updated), info.rho]
    for member, twin in zip(members, twins, strict=True):
        mine, theirs = member.to_state(), twin.to_state()
        for key, value in mine.items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(value, theirs[key], equal_nan=True), key


@pytest.mark.parametrize("d", [8, NONLINEAR_MAX_FEATURES + 1, 123])
def test_the_default_rosters_run_in_whole_chunks(d: int) -> None:
    """The default grid fills chunks exactly: every linear and quadratic member is in one; only the
    forests and the neighbours run alone."""
    model = ModelConfig(n_features=d).build_learner()
    groups = MemberGroups(model.members, model.member_forms)  # type: ignore[attr-defined]
    algorithms = model.member_algorithms  # type: ignore[attr-defined]
    assert {algorithms[k] for k in groups.singles} <= {"amf", "knn"}
    assert len(groups.chunks) * CHUNK == sum(a not in ("amf", "knn") for a in algorithms) > 0
