"""The versioned binary format of checkpoint state trees (never pickle).

A *state tree* is a nested ``Mapping[str, ...]`` whose leaves are numpy arrays of a
numeric or bool dtype (any shape, 0-d included), ``int``, ``float``, ``bool``, ``str``,
``None``, or lists of ``str``/``int``/``float``/``bool``. Empty mappings are kept.

Layout of a blob (all integers little-endian)::

    magic      8 bytes   b"ACOGSTAT"
    version    u16       SCHEMA_VERSION of the encoder
    hlen       u32       length of the header
    header     hlen      UTF-8 JSON: {"leaves": [...], "payload": <payload length>}
    payload    ...       raw C-order bytes of every array, back to back, in header order
    checksum   32 bytes  SHA-256 of everything above

Each header leaf is ``{"path": [key, ...], "kind": ...}`` plus, for ``array``: ``dtype``
(``dtype.str``, so byte order is kept), ``shape``, ``offset`` and ``nbytes`` into the
payload; for scalars their value inline: ``float`` as the 16 hex digits of its 8
IEEE-754 bytes (exact, NaN payloads and -0.0 included), ``int``/``bool``/``str`` as JSON,
``list`` as ``items`` of the same scalar form; ``none`` and ``map`` (an empty mapping)
carry nothing more.

The frame (magic, version field, header length, trailing SHA-256) is fixed for every
version; a new version may only change what the header and payload mean. So the checksum
is verified before the version is looked at: a damaged blob is always
:class:`CorruptBlob`, and a sound blob from a newer encoder is :class:`UnsupportedVersion`.
Both fail loudly; the engine then falls back to an older checkpoint and a longer replay.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

MAGIC = b"ACOGSTAT"
SCHEMA_VERSION = 1

_PREFIX = struct.Struct("<8sHI")
_DIGEST_SIZE = hashlib.sha256().digest_size
_FLOAT_BITS = struct.Struct("<d")
_ARRAY_KINDS = frozenset("biufc")

StateTree = Mapping[str, Any]


class CodecError(Exception):
    """Base class of every error of the state codec."""


class CorruptBlob(CodecError):
    """Bad magic, truncation, checksum mismatch or an inconsistent header."""


class UnsupportedVersion(CodecError):
    """A sound blob written by a newer schema version than this code reads."""

    def __init__(self, version: int) -> None:
        super().__init__(f"state blob has schema version {version}; this code reads up to {SCHEMA_VERSION}")
        self.version = version


class UnencodableValue(CodecError, TypeError):
    """A state tree holds a value the codec has no representation for."""


def encode_state(tree: StateTree) -> bytes:
    """Encode a state tree into a self-checking blob (see the module docstring for the layout)."""
    if not isinstance(tree, Mapping):
        raise UnencodableValue(f"a state tree is a mapping, got {type(tree).__name__}")
    leaves: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    offset = 0
    for path, value in _walk(tree, ()):
        leaf: dict[str, Any] = {"path": list(path)}
        if isinstance(value, np.ndarray):
            leaf.update(kind="array", dtype=value.dtype.str, shape=list(value.shape))
            leaf.update(offset=offset, nbytes=value.nbytes)
            chunks += _array_pieces(value)
            offset += value.nbytes
        else:
            leaf.update(_encode_scalar(value, path))
        leaves.append(leaf)
    header = json.dumps({"leaves": leaves, "payload": offset}, separators=(",", ":")).encode("ascii")
    body = [_PREFIX.pack(MAGIC, SCHEMA_VERSION, len(header)), header, *chunks]
    digest = hashlib.sha256()
    for piece in body:
        digest.update(piece)  # hashlib releases the GIL on large pieces
    return b"".join([*body, digest.digest()])  # a join of bytes objects only: releases the GIL too


_PIECE_BYTES = 4 * 1024 * 1024


def _array_pieces(value: np.ndarray) -> list[bytes]:
    """The array's raw C-order bytes, in pieces of at most ``_PIECE_BYTES``.

    One ``tobytes`` of a large array holds the GIL for its whole copy (half a second for a
    large model, which stalls the event loop while a checkpoint is encoded in a thread);
    pieces hold it a few milliseconds each.
    """
    if value.nbytes <= _PIECE_BYTES:
        return [value.tobytes(order="C")]
    raw = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
    return [raw[start : start + _PIECE_BYTES].tobytes() for start in range(0, raw.size, _PIECE_BYTES)]


def decode_state(blob: bytes) -> dict[str, Any]:
    """Decode a blob made by :func:`encode_state`; arrays come back as writable C-contiguous copies.

    Raises :class:`CorruptBlob` or :class:`UnsupportedVersion`; never returns a partial tree.
    """
    view = memoryview(blob)
    if len(view) < _PREFIX.size + _DIGEST_SIZE:
        raise CorruptBlob(f"state blob too short ({len(view)} bytes)")
    magic, version, header_len = _PREFIX.unpack_from(view)
    if magic != MAGIC:
        raise CorruptBlob("not a state blob (bad magic)")
    body = view[: len(view) - _DIGEST_SIZE]
    if hashlib.sha256(body).digest() != view[len(body) :]:
        raise CorruptBlob("state blob checksum mismatch (damaged or truncated)")
    if version > SCHEMA_VERSION:
        raise UnsupportedVersion(version)
    if version < 1:
        raise CorruptBlob(f"invalid schema version {version}")
    header_end = _PREFIX.size + header_len
    if header_end > len(body):
        raise CorruptBlob("state blob header runs past its end")
    try:
        header = json.loads(bytes(body[_PREFIX.size : header_end]).decode("ascii"))
        return _rebuild(header, body[header_end:])
    except CorruptBlob:
        raise
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise CorruptBlob(f"bad state blob header: {exc}") from exc


def _walk(node: StateTree, prefix: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Depth-first ``(path, leaf)`` pairs, in mapping order; an empty mapping is a leaf."""
    for key, value in node.items():
        if not isinstance(key, str):
            raise UnencodableValue(f"state keys are str, got {key!r} under {list(prefix)}")
        path = (*prefix, key)
        if isinstance(value, Mapping) and value:
            yield from _walk(value, path)
        elif isinstance(value, np.ndarray) and (
            value.dtype.kind not in _ARRAY_KINDS or value.dtype.hasobject
        ):
            raise UnencodableValue(f"array at {list(path)} has unsupported dtype {value.dtype}")
        else:
            yield path, value


def _encode_scalar(value: Any, path: tuple[str, ...]) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return {"kind": "map"}
    if isinstance(value, list):
        return {"kind": "list", "items": [_encode_item(item, path) for item in value]}
    if value is None:
        return {"kind": "none"}
    return _encode_item(value, path)


def _encode_item(value: Any, path: tuple[str, ...]) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"kind": "bool", "value": value}
    if isinstance(value, int):
        return {"kind": "int", "value": int(value)}
    if isinstance(value, float):
        return {"kind": "float", "bits": _FLOAT_BITS.pack(value).hex()}
    if isinstance(value, str):
        return {"kind": "str", "value": value}
    hint = (
        " (wrap numpy scalars with np.asarray to keep their dtype)" if isinstance(value, np.generic) else ""
    )
    raise UnencodableValue(f"cannot encode {type(value).__name__} at {list(path)}{hint}")


def _rebuild(header: dict[str, Any], payload: memoryview) -> dict[str, Any]:
    """The tree described by ``header``; every inconsistency raises CorruptBlob."""
    if not isinstance(header, dict) or not isinstance(header["leaves"], list):
        raise CorruptBlob("bad state blob header")
    if header["payload"] != len(payload):
        raise CorruptBlob("state blob payload length does not match its header")
    root: dict[str, Any] = {}
    empty_maps: set[int] = set()
    offset = 0
    for leaf in header["leaves"]:
        path = leaf["path"]
        if not isinstance(path, list) or not path or not all(isinstance(key, str) for key in path):
            raise CorruptBlob(f"bad leaf path {path!r}")
        if leaf["kind"] == "array":
            value: Any = _decode_array(leaf, payload, offset)
            offset += leaf["nbytes"]
        else:
            value = _decode_scalar(leaf)
            if isinstance(value, dict):
                empty_maps.add(id(value))
        _place(root, path, value, empty_maps)
    if offset != len(payload):
        raise CorruptBlob("state blob payload has bytes no leaf describes")
    return root


def _decode_array(leaf: dict[str, Any], payload: memoryview, expected_offset: int) -> np.ndarray:
    dtype_str, shape, offset, nbytes = leaf["dtype"], leaf["shape"], leaf["offset"], leaf["nbytes"]
    if not isinstance(dtype_str, str) or not isinstance(shape, list):
        raise CorruptBlob("bad array leaf")
    dtype = np.dtype(dtype_str)
    if dtype.str != dtype_str or dtype.kind not in _ARRAY_KINDS or dtype.hasobject or dtype.itemsize == 0:
        raise CorruptBlob(f"bad array dtype {dtype_str!r}")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise CorruptBlob(f"bad array shape {shape!r}")
    if offset != expected_offset or nbytes != math.prod(shape) * dtype.itemsize:
        raise CorruptBlob("array leaf offset or size is inconsistent")
    if offset + nbytes > len(payload):
        raise CorruptBlob("array leaf runs past the payload")
    flat = np.frombuffer(payload[offset : offset + nbytes], dtype=dtype)
    return flat.reshape(shape).copy()


def _decode_scalar(leaf: dict[str, Any]) -> Any:
    kind = leaf["kind"]
    if kind == "map":
        return {}
    if kind == "none":
        return None
    if kind == "list":
        items = leaf["items"]
        if not isinstance(items, list):
            raise CorruptBlob("bad list leaf")
        return [_decode_item(item) for item in items]
    return _decode_item(leaf)


def _decode_item(item: dict[str, Any]) -> Any:
    kind = item["kind"]
    if kind == "float":
        bits = item["bits"]
        if not isinstance(bits, str) or len(bits) != 2 * _FLOAT_BITS.size:
            raise CorruptBlob("bad float leaf")
        return _FLOAT_BITS.unpack(bytes.fromhex(bits))[0]
    expected = {"bool": bool, "int": int, "str": str}.get(kind)
    value = item["value"]
    if expected is None or type(value) is not expected:
        raise CorruptBlob(f"bad {kind!r} leaf")
    return value


def _place(root: dict[str, Any], path: list[str], value: Any, empty_maps: set[int]) -> None:
    """Put ``value`` at ``path``, refusing to overwrite a leaf or to grow an empty-map leaf."""
    node = root
    for key in path[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict) or id(child) in empty_maps:
            raise CorruptBlob(f"leaf path {path!r} crosses another leaf")
        node = child
    if path[-1] in node:
        raise CorruptBlob(f"leaf path {path!r} appears twice")
    node[path[-1]] = value
