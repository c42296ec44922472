"""The compact encoding of feature vectors carried by pending predictions and log events."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from model_store import Example, ExampleDecodeError, decode_example, encode_example

any_float = st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", bits.to_bytes(8, "little"))[0])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@given(st.lists(st.tuples(st.integers(0, 2**62), any_float), unique_by=lambda p: p[0], max_size=50))
def test_sparse_round_trip_is_bit_exact(pairs: list[tuple[int, float]]) -> None:
    pairs.sort()
    example = Example.sparse([i for i, _ in pairs], [v for _, v in pairs])
    decoded = decode_example(encode_example(example))
    assert decoded == example
    assert decoded.indices is not None and example.indices is not None
    assert same_bits(decoded.values, example.values) and same_bits(decoded.indices, example.indices)


@given(st.lists(any_float, max_size=50))
def test_dense_round_trip_is_bit_exact(values: list[float]) -> None:
    example = Example.dense(values)
    blob = encode_example(example)
    assert len(blob) == 6 + 8 * len(values)  # dense vectors do not carry their indices
    decoded = decode_example(blob)
    assert decoded.indices is not None
    assert same_bits(decoded.values, example.values)
    assert np.array_equal(decoded.indices, np.arange(len(values)))


@given(st.dictionaries(st.text(), any_float, max_size=30))
def test_named_round_trip_is_bit_exact(features: dict[str, float]) -> None:
    example = Example.named(features.keys(), list(features.values()))
    decoded = decode_example(encode_example(example))
    assert decoded.names == example.names
    assert same_bits(decoded.values, example.values)


def test_negative_zero_and_nan_payloads_survive() -> None:
    nan_payload = struct.unpack("<d", struct.pack("<Q", 0x7FF0_0000_0000_0001))[0]
    example = Example.sparse([3, 8], [-0.0, nan_payload])
    assert decode_example(encode_example(example)).values.tobytes() == example.values.tobytes()


@pytest.mark.parametrize(
    "build",
    [
        lambda: Example(np.zeros(2)),
        lambda: Example(np.zeros(2), indices=np.arange(2), names=("a", "b")),
        lambda: Example(np.zeros(2, dtype=np.float32), indices=np.arange(2)),
        lambda: Example.sparse([2, 1], [1.0, 2.0]),
        lambda: Example.sparse([1, 1], [1.0, 2.0]),
        lambda: Example.sparse([-1, 1], [1.0, 2.0]),
        lambda: Example.sparse([1], [1.0, 2.0]),
        lambda: Example.named(["a", "a"], [1.0, 2.0]),
    ],
)
def test_invalid_examples_are_refused(build: object) -> None:
    with pytest.raises(ValueError):
        build()  # type: ignore[operator]


def test_malformed_blobs_fail_loudly() -> None:
    blob = encode_example(Example.sparse([1, 5], [1.0, 2.0]))
    for bad in (b"", blob[:5], blob[:-1], blob + b"\0", b"\x02" + blob[1:], blob[:1] + b"\x09" + blob[2:]):
        with pytest.raises(ExampleDecodeError):
            decode_example(bad)


def test_decoded_arrays_are_read_only() -> None:
    decoded = decode_example(encode_example(Example.dense([1.0, 2.0])))
    with pytest.raises(ValueError):
        decoded.values[0] = 3.0


@given(st.lists(st.tuples(st.integers(0, 2**62), any_float), unique_by=lambda p: p[0], max_size=50))
def test_a_trusted_example_is_the_checked_one(pairs: list[tuple[int, float]]) -> None:
    """``Example.trusted`` (the feature parser's, whose input ``canonical`` checked) builds what
    ``Example.sparse`` builds, bit for bit, encoding included."""
    pairs.sort()
    indices = np.array([i for i, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=np.float64)
    trusted, checked = Example.trusted(values, indices), Example.sparse(indices, values)
    assert encode_example(trusted) == encode_example(checked)
    assert trusted.indices is not None and checked.indices is not None
    assert same_bits(trusted.values, checked.values) and same_bits(trusted.indices, checked.indices)
