"""The parser's way for a dense list (``canonical_dense``, ``max_abs``) gives what the general way
(``canonical``, ``np.abs(values).max()``) gives: the same vector, bit for bit, or the same refusal."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.features import FeatureError, FeatureSpace
from service.learners.errors import InvalidInput
from service.learners.inputs import canonical, canonical_dense, max_abs
from service.model_config import ModelConfig

N = 6
entries = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 5e-324]),
)


def outcome(convert: Any, x: Any, n: int, keep_zeros: bool) -> tuple[str, Any, Any]:
    try:
        idx, val = convert(x, n, keep_zeros=keep_zeros)
    except InvalidInput as exc:
        return ("refused", exc.field, exc.problem)
    return ("vector", idx.tolist(), val.tobytes())


@settings(max_examples=300, deadline=None)
@given(values=st.lists(entries, min_size=N - 1, max_size=N + 1), keep_zeros=st.booleans())
def test_canonical_dense_is_canonical(values: list[float], keep_zeros: bool) -> None:
    x = np.asarray(values, dtype=np.float64)
    assert outcome(canonical_dense, x, N, keep_zeros) == outcome(canonical, x, N, keep_zeros)


@pytest.mark.parametrize(
    "x",
    [
        np.ones((1, N)),  # a row, not a vector
        np.arange(N),  # integers
        np.ones(N, dtype=np.float32),
        np.ones(2 * N)[::2],  # not contiguous
        np.array([True] * N),
    ],
)
def test_other_arrays_go_the_general_way(x: np.ndarray) -> None:
    for keep_zeros in (False, True):
        assert outcome(canonical_dense, x, N, keep_zeros) == outcome(canonical, x, N, keep_zeros)


@given(values=st.lists(st.floats(-1e300, 1e300), max_size=20))
def test_max_abs_is_the_largest_magnitude(values: list[float]) -> None:
    x = np.asarray(values, dtype=np.float64)
    assert max_abs(x) == (float(np.abs(x).max()) if x.size else 0.0)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(entries, min_size=N - 1, max_size=N + 1), presence=st.booleans())
def test_the_parser_reads_a_list_as_canonical_reads_it(values: list[float], presence: bool) -> None:
    space = FeatureSpace(ModelConfig(n_features=N, algorithm="oli2ds" if presence else "acog"))
    assert space.keep_zeros is presence
    try:
        example, (idx, val) = space.parse(values)
    except FeatureError as exc:
        with pytest.raises(InvalidInput) as general:
            canonical(np.asarray(values, dtype=np.float64), N, keep_zeros=presence)
        assert exc.problem == general.value.problem.replace("n_features", "the model's n_features")
        return
    want_idx, want_val = canonical(np.asarray(values, dtype=np.float64), N, keep_zeros=presence)
    if space.unit_rows:  # normalize "auto" for a single learner: the parser scales to unit L2 norm
        assert idx.tolist() == want_idx.tolist()
    else:
        assert (idx.tolist(), val.tobytes()) == (want_idx.tolist(), want_val.tobytes())
    assert example.values.tobytes() == val.tobytes()
