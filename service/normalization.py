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


def unit_l2(values: np.ndarray) -> np.ndarray:
    """One vector's values scaled to unit L2 norm (a new array)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    return unit_l2_rows(np.array([0, values.shape[0]], dtype=np.int64), values)
