"""The feature vector of one example, and its compact binary form.

An :class:`Example` is what a pending prediction and a label-log event carry as ``x``:
float64 ``values`` keyed either by sorted unique int64 feature ``indices`` or by feature
``names`` (exactly one of the two). A dense vector is ``indices = arange(n)``.

Encoded layout (little-endian; hot path, so plain ``struct`` and ``ndarray.tobytes``)::

    u8 format (1) | u8 kind | u32 n | n float64 values | body

where the body depends on ``kind``: ``INDICES``: n int64 indices; ``DENSE``: nothing
(indices are ``arange(n)``); ``NAMES``: n u32 name lengths in code points, then the
names concatenated as UTF-8 (``surrogatepass``). Values round-trip bit for bit.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

FORMAT = 1
INDICES, DENSE, NAMES = 1, 2, 3
HEADER = struct.Struct("<BBI")

_F8 = np.dtype("<f8")
_I8 = np.dtype("<i8")
_U4 = np.dtype("<u4")


class ExampleDecodeError(ValueError):
    """Bytes that are not a well-formed encoded example."""


@dataclass(frozen=True, eq=False, slots=True)
class Example:
    """One feature vector: float64 ``values`` with either int64 ``indices`` or ``names``.

    Arrays are stored as given (after checks) and must not be mutated afterwards. Two
    examples are equal when they have the same keys and bit-identical values.
    """

    values: np.ndarray
    indices: np.ndarray | None = None
    names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        values = self.values
        if not isinstance(values, np.ndarray) or values.dtype != np.float64 or values.ndim != 1:
            raise ValueError("Example.values must be a 1-d float64 array")
        if (self.indices is None) == (self.names is None):
            raise ValueError("an Example has exactly one of indices or names")
        if self.indices is not None:
            indices = self.indices
            if not isinstance(indices, np.ndarray) or indices.dtype != np.int64 or indices.ndim != 1:
                raise ValueError("Example.indices must be a 1-d int64 array")
            if len(indices) != len(values):
                raise ValueError("Example.indices and values differ in length")
            if len(indices) and (indices[0] < 0 or not bool(np.all(indices[1:] > indices[:-1]))):
                raise ValueError("Example.indices must be non-negative, sorted and unique")
        else:
            names = self.names
            if not isinstance(names, tuple) or not all(isinstance(name, str) for name in names):
                raise ValueError("Example.names must be a tuple of str")
            if len(names) != len(values):
                raise ValueError("Example.names and values differ in length")
            if len(set(names)) != len(names):
                raise ValueError("Example.names must be unique")

    @classmethod
    def dense(cls, values: Any) -> Example:
        """A dense vector: feature ``i`` is ``values[i]``."""
        array = np.ascontiguousarray(values, dtype=np.float64)
        return cls(array, indices=np.arange(len(array), dtype=np.int64))

    @classmethod
    def sparse(cls, indices: Any, values: Any) -> Example:
        """A sparse vector; ``indices`` must already be sorted and unique."""
        return cls(
            np.ascontiguousarray(values, dtype=np.float64), indices=np.asarray(indices, dtype=np.int64)
        )

    @classmethod
    def named(cls, names: Any, values: Any) -> Example:
        """A vector keyed by feature names, to be mapped through the model's feature registry."""
        return cls(np.ascontiguousarray(values, dtype=np.float64), names=tuple(names))

    @classmethod
    def trusted(cls, values: np.ndarray, indices: np.ndarray) -> Example:
        """A sparse vector its caller has already checked as :meth:`sparse` would (1-d contiguous
        float64 values, 1-d int64 indices of the same length, non-negative, strictly increasing):
        built without checking them again."""
        return cls._unchecked(np.ascontiguousarray(values), indices, None)

    @classmethod
    def _unchecked(
        cls, values: np.ndarray, indices: np.ndarray | None, names: tuple[str, ...] | None
    ) -> Example:
        """Build without the checks, for :func:`decode_example`: its input came from a checked Example."""
        example = object.__new__(cls)
        object.__setattr__(example, "values", values)
        object.__setattr__(example, "indices", indices)
        object.__setattr__(example, "names", names)
        return example

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Example):
            return NotImplemented
        return encode_example(self) == encode_example(other)

    __hash__ = None  # type: ignore[assignment]


def encode_example(example: Example) -> bytes:
    """The compact binary form of ``example`` (see the module docstring)."""
    values = example.values.astype(_F8, copy=False).tobytes()
    n = len(example.values)
    if example.names is not None:
        lengths = np.fromiter(map(len, example.names), dtype=_U4, count=n)
        text = "".join(example.names).encode("utf-8", "surrogatepass")
        return HEADER.pack(FORMAT, NAMES, n) + values + lengths.tobytes() + text
    indices = example.indices
    assert indices is not None
    if n == 0 or (indices[0] == 0 and indices[-1] == n - 1):
        return HEADER.pack(FORMAT, DENSE, n) + values
    return HEADER.pack(FORMAT, INDICES, n) + values + indices.astype(_I8, copy=False).tobytes()


def decode_example(blob: bytes) -> Example:
    """Rebuild an :class:`Example`; arrays are read-only views on ``blob``.

    Only the framing is checked (lengths, kind): the blob was made by :func:`encode_example`
    from an Example whose invariants were checked when it was built.

    Raises :class:`ExampleDecodeError` when ``blob`` is not a well-formed encoding.
    """
    try:
        fmt, kind, n = HEADER.unpack_from(blob)
    except Exception as exc:
        raise ExampleDecodeError(f"example blob too short ({len(blob)} bytes)") from exc
    if fmt != FORMAT:
        raise ExampleDecodeError(f"unknown example format {fmt}")
    start = HEADER.size + 8 * n
    try:
        values = np.frombuffer(blob, dtype=_F8, count=n, offset=HEADER.size)
        if kind == DENSE and len(blob) == start:
            return Example._unchecked(values, np.arange(n, dtype=np.int64), None)
        if kind == INDICES and len(blob) == start + 8 * n:
            return Example._unchecked(values, np.frombuffer(blob, dtype=_I8, count=n, offset=start), None)
        if kind == NAMES:
            lengths = np.frombuffer(blob, dtype=_U4, count=n, offset=start).tolist()
            text = blob[start + 4 * n :].decode("utf-8", "surrogatepass")
            names, position = [], 0
            for length in lengths:
                names.append(text[position : position + length])
                position += length
            if position == len(text):
                return Example._unchecked(values, None, tuple(names))
    except ValueError as exc:
        raise ExampleDecodeError(f"malformed example blob: {exc}") from exc
    raise ExampleDecodeError(f"malformed example blob (kind {kind}, n {n}, {len(blob)} bytes)")
