"""Row-wise helpers for streaming a CSR matrix through a learner: unit-L2 scaling and row views."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from ..normalization import unit_l2_rows


def l2_normalize(X: sp.spmatrix | sp.sparray | np.ndarray) -> sp.csr_matrix:
    """Scale every row to unit L2 norm; all-zero rows stay zero. Returns a new canonical CSR matrix.

    The input is never modified. The kernel is :func:`service.normalization.unit_l2_rows`, the
    one the service applies to requests, so these rows and the same rows sent through the API
    are bit-identical. Each row is divided by its largest absolute value before its norm is
    taken, so tiny (subnormal) and huge rows normalise without underflow or overflow.
    """
    out = sp.csr_matrix(X, dtype=np.float64, copy=True)
    out.sum_duplicates()
    out.eliminate_zeros()
    out.data = unit_l2_rows(out.indptr.astype(np.int64), out.data)
    return out


def iter_rows(X: sp.spmatrix | sp.sparray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(indices, values)`` for each row of a CSR matrix, in order, without copying ``X``.

    ``indices`` is int64 and ``values`` float64; when ``X`` already stores those dtypes they are
    read-only views into ``X``.
    """
    if not sp.issparse(X) or X.format != "csr":
        raise TypeError(f"iter_rows needs a CSR matrix, got {type(X).__name__}")
    indptr = X.indptr
    indices = X.indices
    data = X.data
    same = indices.dtype == np.int64 and data.dtype == np.float64
    if same:
        indices = indices.view()
        data = data.view()
        indices.flags.writeable = False
        data.flags.writeable = False
    for i in range(X.shape[0]):
        s, e = int(indptr[i]), int(indptr[i + 1])
        if same:
            yield indices[s:e], data[s:e]
        else:
            yield indices[s:e].astype(np.int64), data[s:e].astype(np.float64)
