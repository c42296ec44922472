"""The ensemble makes a request's L2 form in one kernel (``unit_l2_kernel_vector``): the same bits
as the steps it replaces, ``nonzero``, ``unit_l2``, ``nonzero`` and the member's ``kernel_vector``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from service.learners import EtaGrid
from service.learners.base import read_only
from service.learners.member_inputs import nonzero
from service.learners.migration import FeatureMigration, migrate
from service.learners.vote import appended_entry
from service.model_config import ModelConfig
from service.normalization import unit_l2, unit_l2_kernel_vector

magnitudes = st.one_of(
    st.floats(-1e300, 1e300),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-310, 1e300, -1e300]),
)
vectors = st.lists(magnitudes, max_size=12).map(
    lambda v: (np.flatnonzero(np.ones(len(v))).astype(np.int64) * 2, np.array(v, dtype=np.float64))
)


def by_steps(idx: np.ndarray, val: np.ndarray, tail: int, tail_value: float) -> tuple[np.ndarray, np.ndarray]:
    idx, val = nonzero((idx, val))
    idx, val = nonzero((idx, unit_l2(val)))
    if tail < 0:
        return idx, val
    return np.append(idx, np.int64(tail)), np.append(val, tail_value)


@settings(max_examples=400, deadline=None)
@given(vector=vectors, tail=st.sampled_from([-1, 99]), tail_value=st.sampled_from([1.0, 0.5]))
def test_one_kernel_gives_the_bits_of_the_steps(
    vector: tuple[np.ndarray, np.ndarray], tail: int, tail_value: float
) -> None:
    idx, val = vector
    want = by_steps(idx, val, tail, tail_value)
    for a, b in ((idx, val), (read_only(idx), read_only(val)), (idx, read_only(val))):
        got = unit_l2_kernel_vector(a, b, tail, tail_value)
        assert got[0].tolist() == want[0].tolist()
        assert got[1].tobytes() == want[1].tobytes()


@settings(max_examples=30, deadline=None)
@given(
    rows=st.lists(st.lists(magnitudes, min_size=5, max_size=5), min_size=1, max_size=14),
    d=st.sampled_from([5, 70]),
    intercept=st.booleans(),
)
def test_the_ensemble_makes_every_form_as_before(rows: list[list[float]], d: int, intercept: bool) -> None:
    """Every form the ensemble's kernels read, scoring and learning, against the general way
    (``_kernel_vectors`` of ``vectors_unchecked``), the standardisation learning the same rows (up to
    14: past its warm-up of ten)."""
    fast = ModelConfig(n_features=d, fit_intercept=intercept).build_learner()
    slow = ModelConfig(n_features=d, fit_intercept=intercept).build_learner()
    assert isinstance(fast, EtaGrid) and isinstance(slow, EtaGrid)
    assert appended_entry(fast.members[0]) == ((d, 1.0) if intercept else (-1, 0.0))
    for row in rows:
        idx, val = nonzero((np.arange(5, dtype=np.int64) * (d // 5), np.array(row)))
        for learn in (False, True):
            got = fast._unchecked_kernels((idx, val), learn=learn)
            want = slow._kernel_vectors(slow.inputs.vectors_unchecked((idx, val), learn=learn))
            assert sorted(got) == sorted(want) == sorted(fast.inputs.forms)
            for form in want:
                assert got[form][0].tolist() == want[form][0].tolist()
                assert got[form][1].tobytes() == want[form][1].tobytes()
    for name, array in fast.inputs.arrays.items():
        assert array.tobytes() == slow.inputs.arrays[name].tobytes()


def test_a_migrated_ensemble_appends_its_new_intercept() -> None:
    """Schema migration copies the ensemble and replaces its members: the L2 form it makes after
    that carries the new intercept index, the one its members' ``kernel_vector`` appends."""
    old = ModelConfig(n_features=9).build_learner()
    assert isinstance(old, EtaGrid)
    vector = (np.array([0, 3, 4]), np.array([0.5, -2.0, 1.0]))
    before = old._unchecked_kernels(vector)["l2"]
    assert before[0].tolist() == [0, 3, 4, 9]
    new = migrate(old, FeatureMigration.from_indices(9, [4, 0, 3], 2))  # 5 features now
    assert isinstance(new, EtaGrid)
    moved = (np.array([0, 1, 2]), np.array([1.0, 0.5, -2.0]))
    got = new._unchecked_kernels(moved)
    want = new._kernel_vectors(new.inputs.vectors_unchecked(moved))
    assert got["l2"][0].tolist() == want["l2"][0].tolist() == [0, 1, 2, 5]
    assert got["l2"][1].tobytes() == want["l2"][1].tobytes()
    assert got["standard"][0].tolist() == want["standard"][0].tolist()  # no spread yet: the intercept
    assert got["standard"][0].tolist() == [5]
    assert new.score_unchecked(moved) == new._vote(want)
    assert old._unchecked_kernels(vector)["l2"][0].tolist() == [0, 3, 4, 9]  # the old one unchanged
