"""Request bodies: features in any of the service's three forms, encoded as JSON.

- **dense**: a sequence of ``n_features`` numbers (a list, a tuple, a 1-D numpy array);
- **sparse**: :class:`Sparse` (or ``{"indices": [...], "values": [...]}``, or a one-row
  scipy sparse matrix): 0-based indices and the values at them;
- **named**: a mapping ``{name: value}`` for models with named features.

A batch (``instances``) is a sequence of those, a 2-D numpy array (one row per instance) or
a scipy sparse matrix (one sparse instance per row).

Bodies are encoded by :func:`encode` without walking the data in Python: numpy arrays and
scalars are converted by the encoder's ``default`` hook. The client does not import numpy: a numpy
value can only come from a caller that did (:func:`_numpy`). ``NaN`` and infinities are sent as
JSON's non-standard ``NaN``/``Infinity`` tokens on purpose, so that the *service* refuses
them with its own 422 naming the field and the position (one place validates requests,
the server), instead of the client failing with an encoder error that names neither.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias


@dataclass(frozen=True)
class Sparse:
    """A sparse instance: 0-based ``indices`` and the ``values`` at them."""

    indices: Sequence[int]
    values: Sequence[float]


Features: TypeAlias = Sequence[float] | Sparse | Mapping[str, float] | Any
"""Dense, sparse or named features (``Any`` admits numpy arrays and scipy rows)."""


def _numpy() -> Any:
    """numpy when the process imported it, else None (then no value can be a numpy array)."""
    return sys.modules.get("numpy")


def sparse_rows(matrix: Any) -> list[Sparse]:
    """One :class:`Sparse` per row of a scipy sparse matrix."""
    csr = matrix.tocsr()
    return [
        Sparse(csr.indices[start:end], csr.data[start:end])
        for start, end in zip(csr.indptr[:-1], csr.indptr[1:], strict=True)
    ]


def features(value: Features) -> Any:
    """One instance as the service reads it (a one-row scipy matrix becomes sparse)."""
    if hasattr(value, "tocsr"):
        rows = sparse_rows(value)
        if len(rows) != 1:
            raise ValueError(f"features: a sparse matrix of one row is one instance, got {len(rows)} rows")
        return rows[0]
    return value


def instances(values: Any) -> Any:
    """A batch as the service reads it."""
    if hasattr(values, "tocsr"):
        return sparse_rows(values)
    np = _numpy()
    if np is not None and isinstance(values, np.ndarray) and values.ndim != 2:
        raise ValueError(f"instances: a numpy batch must be 2-D (one row per instance), got {values.ndim}-D")
    return values


def _jsonable(value: Any) -> Any:
    """The encoder's hook for what ``json`` does not know: numpy values and :class:`Sparse`."""
    if isinstance(value, Sparse):
        return {"indices": value.indices, "values": value.values}
    np = _numpy()
    if np is not None and isinstance(value, np.ndarray):
        return value.tolist()
    if np is not None and isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "tocsr"):
        return _jsonable(features(value))
    raise TypeError(f"cannot send a {type(value).__name__} to the service")


def encode(body: Any) -> bytes:
    """The JSON bytes of a request body (see the module docstring for NaN)."""
    return json.dumps(body, allow_nan=True, default=_jsonable, separators=(",", ":")).encode()


def with_model(body: dict[str, Any], model: str | None) -> dict[str, Any]:
    """``body`` with ``model`` when one is named (else the server's default model applies)."""
    return body if model is None else {"model": model, **body}
