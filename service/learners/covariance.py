"""Shared pieces of the full-covariance learners (ACOG and AROW).

Both keep a dense, symmetric ``d x d`` matrix ``Sigma`` (init identity), so a round costs
O(d^2) time and the model O(d^2) memory. ``create`` refuses a model whose ``Sigma`` would
not fit in ``memory_budget`` bytes, rather than failing later for lack of memory.
"""

from __future__ import annotations

import numpy as np

from ..jit_cache import kernel
from .errors import InvalidParameter
from .params import positive_int

DEFAULT_MEMORY_BUDGET = 512 * 2**20
memory_budget = positive_int("memory_budget")


def check_sigma_fits(algorithm: str, dim: int, budget: int, copies: int = 1) -> None:
    """Raise :class:`InvalidParameter` when ``copies`` dense ``dim x dim`` matrices exceed ``budget``."""
    need = copies * dim * dim * 8
    if need > budget:
        raise InvalidParameter(
            "n_features",
            f"{algorithm} keeps a dense {dim} x {dim} Sigma"
            + (f" ({copies} copies)" if copies > 1 else "")
            + f": {need / 2**20:.1f} MiB, over the memory budget of {budget / 2**20:.1f} MiB. "
            "Use acog-diag or ssacog (O(d) memory), or raise memory_budget.",
        )


@kernel
def sigma_times(sigma: np.ndarray, idx: np.ndarray, val: np.ndarray) -> np.ndarray:
    """``Sigma x`` for sparse x: a combination of the rows of the symmetric Sigma, O(d nnz)."""
    u = np.zeros(sigma.shape[0])
    for k in range(idx.shape[0]):
        row = sigma[idx[k]]
        xk = val[k]
        for i in range(u.shape[0]):
            u[i] += row[i] * xk
    return u


@kernel
def sigma_x_and_quadratic(sigma: np.ndarray, idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, float]:
    """``u = Sigma x`` and ``v = x^T Sigma x = x . u``, for sparse x."""
    u = sigma_times(sigma, idx, val)
    v = 0.0
    for k in range(idx.shape[0]):
        v += val[k] * u[idx[k]]
    return u, v


@kernel
def subtract_outer(sigma: np.ndarray, u: np.ndarray, scale: float) -> None:
    """``Sigma <- Sigma - scale * u u^T``; ``(u_i u_j) scale`` keeps Sigma exactly symmetric."""
    n = u.shape[0]
    for i in range(n):
        ui = u[i]
        row = sigma[i]
        for j in range(n):
            row[j] -= ui * u[j] * scale


def identity(dim: int) -> np.ndarray:
    return np.eye(dim, dtype=np.float64)
