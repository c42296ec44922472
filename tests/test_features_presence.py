"""Presence reaches the learner: explicit zeros are kept for learners that declare ``needs_presence``
(OLI2DS), and every other learner's input is what it was before, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model_store import Example
from service.features import FeatureSpace, needs_presence
from service.learners import ALGORITHMS
from service.model_config import ModelConfig
from service.normalization import unit_l2

NAMES = ["a", "b", "c", "d", "e", "f"]
value = st.sampled_from([0.0, -0.0, 1.5, -2.0, 3.25, 1e-300])
named = st.dictionaries(st.sampled_from(NAMES), value, min_size=1, max_size=6)
dense = st.lists(value, min_size=6, max_size=6)


def old_vector(registry: dict[str, int], names: tuple[str, ...], values: np.ndarray) -> tuple:
    """What ``FeatureSpace`` gave every learner before presence existed: known names, sorted by
    index, zeros dropped."""
    pairs = sorted((registry[n], v) for n, v in zip(names, values, strict=True) if n in registry)
    idx = np.array([p[0] for p in pairs], dtype=np.int64)
    val = np.array([p[1] for p in pairs], dtype=np.float64)
    keep = val != 0.0
    return idx[keep], val[keep]


def identical(a: tuple, b: tuple) -> bool:
    return all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(a, b, strict=True)
    )


OTHERS = [None, "acog", "pa1", "acog-diag", "ssacog"]


def test_only_oli2ds_declares_presence() -> None:
    assert [name for name, cls in ALGORITHMS.items() if cls.needs_presence] == ["oli2ds"]
    assert needs_presence(ModelConfig(algorithm="oli2ds", max_features=4))
    assert not any(needs_presence(ModelConfig(algorithm=a, max_features=4)) for a in OTHERS)


@pytest.mark.parametrize("algorithm", OTHERS)
@settings(max_examples=25, deadline=None)
@given(stream=st.lists(named, min_size=1, max_size=8))
def test_named_input_of_other_learners_is_unchanged(algorithm: str | None, stream: list) -> None:
    space = FeatureSpace(ModelConfig(algorithm=algorithm, max_features=6, normalize="l2"))
    registry: dict[str, int] = {}
    for features in stream:
        names = tuple(sorted(features))
        example, vector = space.parse(features)
        values = unit_l2(np.array([features[n] for n in names]))
        assert identical((example.values,), (values,)) and example.names == names
        assert identical(vector, old_vector(registry, names, values))  # prediction time
        for n in names:
            registry.setdefault(n, len(registry))
        assert identical(space.vector(example), old_vector(registry, names, values))  # apply time


@pytest.mark.parametrize("algorithm", OTHERS)
@settings(max_examples=25, deadline=None)
@given(row=dense)
def test_indexed_input_of_other_learners_is_unchanged(algorithm: str | None, row: list) -> None:
    space = FeatureSpace(ModelConfig(algorithm=algorithm, n_features=6, normalize="none"))
    arr = np.array(row)
    expected = (np.flatnonzero(arr != 0.0).astype(np.int64), arr[arr != 0.0])
    assert identical(space.parse(row)[1], expected)
    sparse = {"indices": list(range(6)), "values": row}
    assert identical(space.parse(sparse)[1], expected)


@settings(max_examples=25, deadline=None)
@given(stream=st.lists(named, min_size=1, max_size=8))
def test_oli2ds_sees_every_present_name_zeros_included(stream: list) -> None:
    space = FeatureSpace(ModelConfig(algorithm="oli2ds", max_features=6))
    registry: dict[str, int] = {}
    for features in stream:
        names = tuple(sorted(features))
        values = np.array([features[n] for n in names])  # normalize="none" for oli2ds
        example, vector = space.parse(features)
        known = sorted((registry[n], v) for n, v in zip(names, values, strict=True) if n in registry)
        assert vector[0].tolist() == [i for i, _ in known]
        for n in names:
            registry.setdefault(n, len(registry))
        idx, val = space.vector(example)
        assert sorted(idx.tolist()) == idx.tolist() and len(idx) == len(names)
        by_index = {i: n for n, i in registry.items()}
        assert {by_index[i]: v for i, v in zip(idx, val, strict=True)} == features


@pytest.mark.parametrize(
    "features",
    [[0.0, 1.0, 0.0, 2.0], {"indices": [0, 2, 3], "values": [0.0, 0.0, 2.0]}],  # sorted: unsorted is refused
)
def test_oli2ds_sees_explicit_zeros_in_indexed_input(features: Any) -> None:
    space = FeatureSpace(ModelConfig(algorithm="oli2ds", n_features=4))
    example, (idx, val) = space.parse(features)
    if isinstance(features, list):
        assert idx.tolist() == [0, 1, 2, 3] and val.tolist() == features
    else:
        assert idx.tolist() == [0, 2, 3] and val.tolist() == [0.0, 0.0, 2.0]
    assert identical(space.vector(example), (idx, val))


def test_an_absent_name_and_an_explicit_zero_differ_for_oli2ds_only() -> None:
    for algorithm, differ in (("oli2ds", True), ("pa1", False)):
        space = FeatureSpace(ModelConfig(algorithm=algorithm, max_features=4, normalize="none"))
        space.vector(Example.named(("a", "b"), [1.0, 1.0]))  # register both names
        with_zero = space.vector(Example.named(("a", "b"), [1.0, 0.0]))
        without = space.vector(Example.named(("a",), [1.0]))
        assert (not identical(with_zero, without)) is differ
