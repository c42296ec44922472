"""Turning what a caller passes as ``x`` into the one form every kernel reads.

Every learner accepts

- a dense 1-D array (or list) of length ``n_features``;
- a sparse ``(indices, values)`` pair;
- a 1-row scipy sparse matrix (CSR/CSC/COO, matrix or array flavour).

All three become the same *canonical sparse vector*: int64 indices in strictly increasing
order and the float64 values at them, with exact zeros removed. Learners that need to know
which features are *present* (``needs_presence``) ask for ``keep_zeros=True``: then every
entry of a dense vector, and every index a sparse pair or matrix stores, is kept, zeros
included. Because the kernels only
ever see this form, dense and sparse input give bit-identical results, and the cost of a
call is O(nnz(x)) for sparse input (a dense array costs one O(d) scan to find its support).

Nothing here mutates the caller's arrays: every output is a fresh array.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..jit_cache import kernel
from .errors import InvalidInput

SparseVector = tuple[np.ndarray, np.ndarray]
"""``(indices, values)``: int64 strictly increasing, float64 non-zero."""


def read_only(arr: np.ndarray) -> np.ndarray:
    """A view of ``arr`` that cannot be written through."""
    view = arr.view()
    view.flags.writeable = False
    return view


FLOAT64 = np.dtype(np.float64)
"""The dtype of a row the compiled dense scans take (numpy's builtin dtypes are singletons: ``is``
tests it, faster than ``==``; a byte-swapped float64 row is not it and takes the general path)."""


def canonical(x: Any, n_features: int, keep_zeros: bool = False) -> SparseVector:
    """Validate ``x`` and return it as a canonical sparse vector (explicit zeros kept with
    ``keep_zeros``: the present features of ``x``).

    Raises :class:`InvalidInput` (a ``ValueError``) naming ``x`` and the problem: wrong
    length, NaN or inf, an index outside ``[0, n_features)``, a repeated index, a shape
    that is neither a vector nor one row.
    """
    if sp.issparse(x):
        return _from_scipy(x, n_features, keep_zeros)
    if isinstance(x, tuple) and len(x) == 2 and not np.isscalar(x[0]):
        return _from_pair(x[0], x[1], n_features, keep_zeros)
    return _from_dense(x, n_features, keep_zeros)


def canonical_dense(values: np.ndarray, n_features: int, keep_zeros: bool = False) -> SparseVector:
    """:func:`canonical` of a dense array, the same vector or the same refusal: a float64 vector of
    length ``n_features`` is scanned by one kernel without the general checks (the service's
    parser hands over such an array, made from the request's list of numbers), anything else goes
    the general way. ``values`` is kept as the output's values with ``keep_zeros``: pass a fresh array."""
    if values.dtype is not FLOAT64 or values.shape != (n_features,) or values.strides != (8,):
        return _from_dense(values, n_features, keep_zeros)
    status, idx, val = dense_support(values)
    if status != OK:
        raise InvalidInput("x", "contains NaN or inf")
    return (np.arange(n_features, dtype=np.int64), values) if keep_zeros else (idx, val)


def canonical_any(x: Any, n_features: int) -> SparseVector:
    """:func:`canonical` of ``x``; a numpy array by :func:`canonical_dense` (the same vector or the
    same refusal, in one compiled scan for a float64 row of ``n_features``)."""
    return canonical_dense(x, n_features) if type(x) is np.ndarray else canonical(x, n_features)


def _from_dense(x: Any, n_features: int, keep_zeros: bool = False) -> SparseVector:
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("x", f"cannot be read as a numeric vector ({exc})") from None
    if arr.ndim != 1:
        raise InvalidInput("x", f"must be 1-D, got shape {arr.shape}")
    if arr.shape[0] != n_features:
        raise InvalidInput("x", f"has length {arr.shape[0]}, expected n_features = {n_features}")
    values = np.ascontiguousarray(arr, dtype=np.float64) if _numeric(arr) else None
    if values is None:
        raise InvalidInput("x", f"must be numeric, got dtype {arr.dtype}")
    status, idx, val = dense_support(values)
    if status != OK:
        raise InvalidInput("x", "contains NaN or inf")
    if keep_zeros:
        return np.arange(n_features, dtype=np.int64), values.copy()
    return idx, val


def _from_pair(indices: Any, values: Any, n_features: int, keep_zeros: bool = False) -> SparseVector:
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
    if not _numeric(val):
        raise InvalidInput("x", f"must be numeric, got dtype {val.dtype}")
    return _checked(
        np.ascontiguousarray(idx, dtype=np.int64),
        np.ascontiguousarray(val, dtype=np.float64),
        n_features,
        keep_zeros,
    )


def _from_scipy(x: Any, n_features: int, keep_zeros: bool = False) -> SparseVector:
    if x.ndim != 2 or x.shape[0] != 1:
        raise InvalidInput("x", f"a sparse matrix must have exactly one row, got shape {x.shape}")
    if x.shape[1] != n_features:
        raise InvalidInput("x", f"has {x.shape[1]} columns, expected n_features = {n_features}")
    coo = sp.coo_matrix(x)
    if not _numeric(coo.data):
        raise InvalidInput("x", f"must be numeric, got dtype {coo.data.dtype}")
    idx = np.asarray(coo.col, dtype=np.int64)
    val = np.asarray(coo.data, dtype=np.float64)
    if np.unique(idx).size != idx.size:  # scipy allows repeats meaning a sum; make it explicit
        order = np.argsort(idx, kind="stable")
        idx, first = np.unique(idx[order], return_index=True)
        val = np.add.reduceat(val[order], first)
    return _checked(idx, val, n_features, keep_zeros)


def _numeric(arr: np.ndarray) -> bool:
    """Signed or unsigned integers, or floating point (not bool, complex or objects)."""
    return arr.dtype.kind in "iuf"


OK, NOT_FINITE, OUT_OF_RANGE, REPEATED = 0, 1, 2, 3


def _checked(idx: np.ndarray, val: np.ndarray, n_features: int, keep_zeros: bool = False) -> SparseVector:
    status, out_idx, out_val, bad = sorted_support(idx, val, n_features, keep_zeros)
    if status == NOT_FINITE:
        raise InvalidInput("x", "contains NaN or inf")
    if status == OUT_OF_RANGE:
        raise InvalidInput("x", f"index {bad} is outside [0, {n_features})")
    if status == REPEATED:
        raise InvalidInput("x", "a sparse index appears more than once")
    return out_idx, out_val


@kernel
def max_abs(values: np.ndarray) -> float:
    """``max |v|`` over ``values`` (0 for none), in one pass without a temporary array."""
    top = 0.0
    for v in values:
        top = max(top, abs(v))
    return top


@kernel
def dense_support(values: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """``(status, indices, values)`` of the non-zeros of a dense vector, in one pass."""
    n = 0
    for v in values:
        if not np.isfinite(v):
            return NOT_FINITE, np.empty(0, np.int64), np.empty(0, np.float64)
        n += v != 0.0
    idx = np.empty(n, np.int64)
    val = np.empty(n, np.float64)
    k = 0
    for i in range(values.shape[0]):
        if values[i] != 0.0:
            idx[k] = i
            val[k] = values[i]
            k += 1
    return OK, idx, val


@kernel
def sorted_support(
    idx: np.ndarray, val: np.ndarray, n_features: int, keep_zeros: bool
) -> tuple[int, np.ndarray, np.ndarray, int]:
    """Check a sparse pair and return it sorted by index with zeros dropped, unless
    ``keep_zeros`` (fresh arrays).

    ``(status, indices, values, offending index)``: NaN/inf, an index outside
    ``[0, n_features)`` or a repeated index give a non-zero status.
    """
    n = idx.shape[0]
    in_order = True
    for k in range(n):
        if not np.isfinite(val[k]):
            return NOT_FINITE, idx[:0].copy(), val[:0].copy(), 0
        if idx[k] < 0 or idx[k] >= n_features:
            return OUT_OF_RANGE, idx[:0].copy(), val[:0].copy(), idx[k]
        if k and idx[k] <= idx[k - 1]:
            in_order = False
    order = np.arange(n) if in_order else np.argsort(idx, kind="mergesort")
    kept = 0
    for k in range(n):
        if k and idx[order[k]] == idx[order[k - 1]]:
            return REPEATED, idx[:0].copy(), val[:0].copy(), idx[order[k]]
        kept += keep_zeros or val[order[k]] != 0.0
    out_idx = np.empty(kept, np.int64)
    out_val = np.empty(kept, np.float64)
    j = 0
    for k in range(n):
        v = val[order[k]]
        if keep_zeros or v != 0.0:
            out_idx[j] = idx[order[k]]
            out_val[j] = v
            j += 1
    return OK, out_idx, out_val, 0


def with_intercept(vector: SparseVector, index: int, value: float) -> SparseVector:
    """Append the constant intercept feature at ``index`` (the last coordinate)."""
    idx, val = vector
    return np.concatenate((idx, np.array([index], np.int64))), np.concatenate(
        (val, np.array([value], np.float64))
    )
