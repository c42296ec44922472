"""Unit L2 norm, the one implementation used everywhere (data sets, requests, replays).

``x <- x / ||x||_2`` with a zero vector left at zero. To avoid underflow and overflow the
row is first divided by its largest absolute value, then by the norm of the result; the
squares are summed in index order. Using one kernel for the reproduction CLI, the
benchmarks and the service means a stream scored through the API and the same stream run
through the learner library see bit-identical vectors.
"""

from __future__ import annotations

import numpy as np

from .jit_cache import kernel


@kernel
def unit_l2_rows(indptr: np.ndarray, data: np.ndarray) -> np.ndarray:
    """The CSR ``data`` array with every row scaled to unit L2 norm (a new array)."""
    out = np.empty_like(data)
    for i in range(indptr.shape[0] - 1):
        a, b = indptr[i], indptr[i + 1]
        top = 0.0
        for k in range(a, b):
            top = max(top, abs(data[k]))
        if top == 0.0:
            out[a:b] = data[a:b]
            continue
        acc = 0.0
        for k in range(a, b):
            s = data[k] / top
            out[k] = s
            acc += s * s
        norm = np.sqrt(acc)
        for k in range(a, b):
            out[k] = out[k] / norm
    return out


@kernel
def unit_l2_kernel_vector(
    idx: np.ndarray, val: np.ndarray, tail: int, tail_value: float
) -> tuple[np.ndarray, np.ndarray]:
    """A canonical vector's L2 form as a learner's kernel reads it, in one call: the values scaled
    as :func:`unit_l2` scales them (by the largest magnitude, then by the norm of the result, the
    squares summed in index order; a zero vector left at zero), the entries that are zero after it
    dropped (explicit zeros, and underflow), then the entry ``(tail, tail_value)`` (the intercept)
    unless ``tail < 0``. The same bits as ``nonzero``, :func:`unit_l2`, ``nonzero`` and the
    learner's ``kernel_vector`` one after the other: a zero adds an exact 0 to the sum of squares."""
    n = val.shape[0]
    top = 0.0
    for k in range(n):
        top = max(top, abs(val[k]))
    scaled = val.copy()
    if top != 0.0:
        acc = 0.0
        for k in range(n):
            s = val[k] / top
            scaled[k] = s
            acc += s * s
        norm = np.sqrt(acc)
        for k in range(n):
            scaled[k] = scaled[k] / norm
    return nonzero_entries(idx, scaled, tail, tail_value)


@kernel
def nonzero_entries(
    idx: np.ndarray, values: np.ndarray, tail: int, tail_value: float
) -> tuple[np.ndarray, np.ndarray]:
    """The entries ``(idx[k], values[k])`` whose value is not zero, in order, then the entry
    ``(tail, tail_value)`` (an intercept) unless ``tail < 0``: a vector as a learner's kernel reads it."""
    n = values.shape[0]
    kept = 0
    for k in range(n):
        kept += values[k] != 0.0
    m = 1 if tail >= 0 else 0
    out_idx = np.empty(kept + m, np.int64)
    out_val = np.empty(kept + m, np.float64)
    j = 0
    for k in range(n):
        if values[k] != 0.0:
            out_idx[j] = idx[k]
            out_val[j] = values[k]
            j += 1
    if m:
        out_idx[j] = tail
        out_val[j] = tail_value
    return out_idx, out_val


def unit_l2(values: np.ndarray) -> np.ndarray:
    """One vector's values scaled to unit L2 norm (a new array)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    return unit_l2_rows(np.array([0, values.shape[0]], dtype=np.int64), values)


NOT_FINITE, UNREGISTERED = -1, -2
"""What :func:`gathered_row` returns for a row it cannot read."""


SHORT_ROW = 32
"""Rows of at most this many values are put in order by insertion sort, in the caller's buffer (no
allocation); longer ones by ``np.argsort``."""


@kernel
def _order(index: np.ndarray, rank: np.ndarray, by_rank: bool, out: np.ndarray) -> None:
    """``out[:n]``: the positions ``0..n-1`` of ``index`` in increasing order of ``index[p]`` (of
    ``rank[index[p]]`` when ``by_rank``). The keys are distinct (one registered name each), so this
    is ``np.argsort``'s order, made without allocating for a short row."""
    n = index.shape[0]
    if n > SHORT_ROW:
        out[:n] = np.argsort(rank[index]) if by_rank else np.argsort(index)
        return
    for k in range(n):
        key = rank[index[k]] if by_rank else index[k]
        i = k
        while i > 0:
            p = out[i - 1]
            if (rank[index[p]] if by_rank else index[p]) < key:
                break
            out[i] = p
            i -= 1
        out[i] = k


@kernel
def gathered_row(
    values: np.ndarray, index: np.ndarray, rank: np.ndarray, unit: bool, keep_zeros: bool, tail: int,
    tail_value: float, out_idx: np.ndarray, out_val: np.ndarray, w: np.ndarray, margin: np.ndarray,
) -> int:  # fmt: skip
    """A named row as a learner's canonical vector, in one pass: ``values[k]`` is the value of the
    name registered at ``index[k]`` (the names in any order) and ``rank[index[k]]`` that name's
    place in the sorted order of the registered names.

    Writes the vector's entries to the front of ``out_idx``/``out_val`` (room for every value and
    the tail) and returns how many, or :data:`NOT_FINITE` when a value is NaN or inf and
    :data:`UNREGISTERED` when an index is ``-1`` (a name without one). With ``unit`` the values are
    scaled as :func:`unit_l2` scales them in the sorted order of their names: the largest magnitude
    first, then the squares summed in that order, so the same bits. The entries come out in
    increasing index order, exact zeros dropped unless ``keep_zeros``, then the entry
    ``(tail, tail_value)`` (an intercept) unless ``tail < 0``. With a non-empty ``w``,
    ``margin[0] = w . x`` over the entries written, summed in their order: the sum
    :func:`~service.learners.first_order.linear_score` makes for a learner whose weights are ``w``.
    (The caller allocates the output: numba returning new arrays to Python costs more than the whole
    pass. The orders by name and by index are made in ``out_idx`` itself: entry ``j`` is written
    once position ``k >= j`` is read.)"""
    n = values.shape[0]
    for k in range(n):
        if not np.isfinite(values[k]):
            return NOT_FINITE
        if index[k] < 0:
            return UNREGISTERED
    top = 0.0
    norm = 1.0
    if unit:
        for k in range(n):
            top = max(top, abs(values[k]))
        if top != 0.0:
            _order(index, rank, True, out_idx)
            acc = 0.0
            for k in range(n):
                s = values[out_idx[k]] / top
                acc += s * s
            norm = np.sqrt(acc)
    scale = unit and top != 0.0
    _order(index, rank, False, out_idx)
    j = 0
    for k in range(n):
        p = out_idx[k]
        v = values[p]
        if scale:
            v = (v / top) / norm
        if keep_zeros or v != 0.0:
            out_idx[j] = index[p]
            out_val[j] = v
            j += 1
    if tail >= 0:
        out_idx[j] = tail
        out_val[j] = tail_value
        j += 1
    if w.shape[0]:
        s = 0.0
        for k in range(j):
            s += w[out_idx[k]] * out_val[k]
        margin[0] = s
    return j
