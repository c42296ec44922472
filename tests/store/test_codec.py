"""The checkpoint state codec: exact round trips, and loud failures on damage or future versions."""

from __future__ import annotations

import hashlib
import math
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from model_store import (
    SCHEMA_VERSION,
    CorruptBlob,
    UnencodableValue,
    UnsupportedVersion,
    decode_state,
    encode_state,
)

PREFIX = struct.Struct("<8sHI")  # magic, version, header length: the frame every version keeps

any_float = st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", bits.to_bytes(8, "little"))[0])
dtypes = (
    hnp.boolean_dtypes()
    | hnp.integer_dtypes(endianness="?")
    | hnp.unsigned_integer_dtypes(endianness="?")
    | hnp.floating_dtypes(endianness="?")
    | hnp.complex_number_dtypes(endianness="?")
)


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    """Arrays of any supported dtype and shape (0-d and empty included) with arbitrary bit patterns,
    sometimes non-contiguous views."""
    dtype = draw(dtypes)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    if dtype.kind == "b":
        array = draw(hnp.arrays(dtype, shape))
    else:
        raw = draw(
            st.binary(min_size=dtype.itemsize * math.prod(shape), max_size=dtype.itemsize * math.prod(shape))
        )
        array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if array.ndim >= 2 and draw(st.booleans()):
        array = array.T
    return array


scalars = st.none() | st.booleans() | st.integers() | any_float | st.text()
leaves = (
    arrays()
    | scalars
    | st.lists(
        st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | any_float | st.text(), max_size=5
    )
)
trees = st.recursive(
    st.dictionaries(st.text(max_size=8), leaves, max_size=4),
    lambda children: st.dictionaries(st.text(max_size=8), children | leaves, max_size=4),
    max_leaves=12,
)


def assert_identical(decoded: Any, original: Any) -> None:
    """Same structure, same types, arrays with the same dtype, shape and bytes, floats with the same bits."""
    if isinstance(original, dict):
        assert isinstance(decoded, dict) and list(decoded) == list(original)
        for key in original:
            assert_identical(decoded[key], original[key])
    elif isinstance(original, np.ndarray):
        assert isinstance(decoded, np.ndarray)
        assert decoded.dtype.str == original.dtype.str and decoded.shape == original.shape
        assert decoded.tobytes() == original.tobytes()
        assert decoded.flags.c_contiguous and decoded.flags.writeable
    elif isinstance(original, list):
        assert isinstance(decoded, list) and len(decoded) == len(original)
        for a, b in zip(decoded, original, strict=True):
            assert_identical(a, b)
    elif isinstance(original, float):
        assert type(decoded) is float and struct.pack("<d", decoded) == struct.pack("<d", original)
    else:
        assert type(decoded) is type(original) and decoded == original


@settings(max_examples=300)
@given(trees)
def test_round_trip_is_exact(tree: dict[str, Any]) -> None:
    assert_identical(decode_state(encode_state(tree)), tree)


def test_special_values_round_trip() -> None:
    nan_payload = struct.unpack("<d", struct.pack("<Q", 0xFFF0_0000_DEAD_BEEF))[0]
    tree = {
        "learner": {"mu": np.array([-0.0, np.inf, np.nan]), "sigma": np.eye(2, dtype=">f4")},
        "n": 2**80,
        "rho": nan_payload,
        "zero": -0.0,
        "t": np.array(3, dtype=np.int64),
        "empty": {},
        "names": ["a", "é", "\ud800"],
        "mask": np.array([True, False]),
        "nothing": None,
    }
    assert_identical(decode_state(encode_state(tree)), tree)


@settings(max_examples=60)
@given(trees, st.data())
def test_any_flipped_byte_is_detected(tree: dict[str, Any], data: st.DataObject) -> None:
    blob = bytearray(encode_state(tree))
    position = data.draw(st.integers(0, len(blob) - 1))
    blob[position] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptBlob):
        decode_state(bytes(blob))


@settings(max_examples=60)
@given(trees, st.data())
def test_any_truncation_or_extension_is_detected(tree: dict[str, Any], data: st.DataObject) -> None:
    blob = encode_state(tree)
    with pytest.raises(CorruptBlob):
        decode_state(blob[: data.draw(st.integers(0, len(blob) - 1))])
    with pytest.raises(CorruptBlob):
        decode_state(blob + data.draw(st.binary(min_size=1, max_size=40)))


def reframe(blob: bytes, version: int) -> bytes:
    """The same blob claiming another schema version, with a valid checksum (a sound future blob)."""
    magic, _, header_len = PREFIX.unpack_from(blob)
    body = PREFIX.pack(magic, version, header_len) + blob[PREFIX.size : -32]
    return body + hashlib.sha256(body).digest()


@given(trees, st.integers(SCHEMA_VERSION + 1, 2**16 - 1))
def test_future_version_is_refused(tree: dict[str, Any], version: int) -> None:
    with pytest.raises(UnsupportedVersion) as info:
        decode_state(reframe(encode_state(tree), version))
    assert info.value.version == version


def test_version_zero_is_corrupt() -> None:
    with pytest.raises(CorruptBlob):
        decode_state(reframe(encode_state({"a": 1}), 0))


def test_inconsistent_header_with_valid_checksum_is_corrupt() -> None:
    """A buggy encoder's blob (sound checksum, header lying about the payload) still fails loudly."""
    blob = encode_state({"a": np.arange(3)})
    header_len = PREFIX.unpack_from(blob)[2]
    header = blob[PREFIX.size : PREFIX.size + header_len].replace(b'"nbytes":24', b'"nbytes":16')
    body = (
        PREFIX.pack(b"ACOGSTAT", SCHEMA_VERSION, len(header)) + header + blob[PREFIX.size + header_len : -32]
    )
    with pytest.raises(CorruptBlob):
        decode_state(body + hashlib.sha256(body).digest())


@pytest.mark.parametrize(
    "tree",
    [
        {"a": np.array(["x"])},
        {"a": np.array([object()])},
        {"a": (1, 2)},
        {"a": {1, 2}},
        {"a": np.float32(1.0)},
        {1: 2},
        {"a": [[1]]},
        {"a": b"bytes"},
    ],
)
def test_unsupported_values_are_refused(tree: dict[Any, Any]) -> None:
    with pytest.raises(UnencodableValue):
        encode_state(tree)


def test_decoded_arrays_are_independent_of_the_blob() -> None:
    state = decode_state(encode_state({"w": np.zeros(3)}))
    state["w"][0] = 1.0  # writable, owns its memory
    assert state["w"].tolist() == [1.0, 0.0, 0.0]


def test_large_arrays_are_encoded_in_pieces_with_the_same_bytes() -> None:
    """Arrays over 4 MiB are copied piece by piece (short GIL holds); the blob is byte for byte
    the one a single copy makes: prefix, header, each array's C-order bytes, SHA-256."""
    rng = np.random.default_rng(0)
    big = np.asfortranarray(rng.standard_normal((1100, 700)).astype(">f8"))  # ~6 MB, not C-ordered
    blob = encode_state({"w": big, "n": np.arange(3)})
    (hlen,) = struct.unpack_from("<I", blob, 10)
    body = blob[: -hashlib.sha256().digest_size]
    assert body[PREFIX.size + hlen :] == big.tobytes(order="C") + np.arange(3).tobytes()
    assert blob[len(body) :] == hashlib.sha256(body).digest()
    state = decode_state(blob)
    assert state["w"].dtype == big.dtype and np.array_equal(state["w"], big)
