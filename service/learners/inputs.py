"""Turning what a caller passes as ``x`` into the one form every kernel reads.

Every learner accepts

- a dense 1-D array (or list) of length ``n_features``;
- a sparse ``(indices, values)`` pair;
- a 1-row scipy sparse matrix (CSR/CSC/COO, matrix or array flavour).

All three become the same *canonical sparse vector*: int64 indices in strictly increasing
order and the float64 values at them, with exact zeros removed. Because the kernels only
ever see this form, dense and sparse input give bit-identical results, and the cost of a
call is O(nnz(x)) for sparse input (a dense array costs one O(d) scan to find its support).

Nothing here mutates the caller's arrays: every output is a fresh array.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import InvalidInput

SparseVector = tuple[np.ndarray, np.ndarray]
"""``(indices, values)``: int64 strictly increasing, float64 non-zero."""


def canonical(x: Any, n_features: int) -> SparseVector:
    """Validate ``x`` and return it as a canonical sparse vector.

    Raises :class:`InvalidInput` (a ``ValueError``) naming ``x`` and the problem: wrong
    length, NaN or inf, an index outside ``[0, n_features)``, a repeated index, a shape
    that is neither a vector nor one row.
    """
    if sp.issparse(x):
        return _from_scipy(x, n_features)
    if isinstance(x, tuple) and len(x) == 2 and not np.isscalar(x[0]):
        return _from_pair(x[0], x[1], n_features)
    return _from_dense(x, n_features)


def _from_dense(x: Any, n_features: int) -> SparseVector:
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("x", f"cannot be read as a numeric vector ({exc})") from None
    if arr.ndim != 1:
        raise InvalidInput("x", f"must be 1-D, got shape {arr.shape}")
    if arr.shape[0] != n_features:
        raise InvalidInput("x", f"has length {arr.shape[0]}, expected n_features = {n_features}")
    values = _as_float(arr, "x")
    indices = np.flatnonzero(values)
    return indices.astype(np.int64, copy=False), values[indices]


def _from_pair(indices: Any, values: Any, n_features: int) -> SparseVector:
    try:
        idx = np.asarray(indices)
        val = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("x", f"sparse pair cannot be read ({exc})") from None
    if idx.ndim != 1 or val.ndim != 1:
        raise InvalidInput("x", "sparse indices and values must both be 1-D")
    if idx.shape[0] != val.shape[0]:
        raise InvalidInput(
            "x", f"sparse indices ({idx.shape[0]}) and values ({val.shape[0]}) differ in length"
        )
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise InvalidInput("x", f"sparse indices must be integers, got dtype {idx.dtype}")
    idx = idx.astype(np.int64)
    val = _as_float(val, "x")
    return _sorted_support(idx, val, n_features)


def _from_scipy(x: Any, n_features: int) -> SparseVector:
    if x.ndim != 2 or x.shape[0] != 1:
        raise InvalidInput("x", f"a sparse matrix must have exactly one row, got shape {x.shape}")
    if x.shape[1] != n_features:
        raise InvalidInput("x", f"has {x.shape[1]} columns, expected n_features = {n_features}")
    coo = sp.coo_matrix(x)
    idx = np.asarray(coo.col, dtype=np.int64)
    val = _as_float(np.asarray(coo.data), "x")
    if np.unique(idx).size != idx.size:  # scipy allows repeats meaning a sum; make it explicit
        order = np.argsort(idx, kind="stable")
        idx, first = np.unique(idx[order], return_index=True)
        val = np.add.reduceat(val[order], first)
    return _sorted_support(idx, val, n_features)


def _sorted_support(idx: np.ndarray, val: np.ndarray, n_features: int) -> SparseVector:
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n_features:
            bad = lo if lo < 0 else hi
            raise InvalidInput("x", f"index {bad} is outside [0, {n_features})")
        if np.any(np.diff(idx) <= 0):
            order = np.argsort(idx, kind="stable")
            idx, val = idx[order], val[order]
            if np.any(np.diff(idx) == 0):
                raise InvalidInput("x", "a sparse index appears more than once")
    keep = val != 0.0
    if not keep.all():
        idx, val = idx[keep], val[keep]
    return np.ascontiguousarray(idx), np.ascontiguousarray(val)


def _as_float(arr: np.ndarray, field: str) -> np.ndarray:
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise InvalidInput(field, f"must be numeric, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise InvalidInput(field, "must be real, got complex values")
    values = np.array(arr, dtype=np.float64, copy=True)
    if not np.isfinite(values).all():
        raise InvalidInput(field, "contains NaN or inf")
    return values


def with_intercept(vector: SparseVector, index: int, value: float) -> SparseVector:
    """Append the constant intercept feature at ``index`` (the last coordinate)."""
    idx, val = vector
    return np.append(idx, np.int64(index)), np.append(val, value)
