"""SDROGD for a whole ``(lda_weight, lam)`` grid in one pass: what makes the paper's grid search affordable.

The sketch ``B``, the sums ``s, s_+, s_-`` and the counts depend on the data and ``l`` alone, not
on ``eta`` (``lda_weight``) or ``lam``. So for one training order and one ``sketch_fraction``, all
``G`` members of the grid share them: one pass keeps ``G`` weight vectors ``W`` and batch sums, and
one sketch. Each member's update is the learner's (:mod:`service.learners.sdrogd`, rho = 1, the
paper's hinge)::

    per example: for every member j with 1 - y W_j.x > 0: g_j += y x;  then k, N_y, s, s_y, B as usual
    per step:    BW = B W';  for every j:  z_j = eta_j B'(BW)_j / N - eta'_j u (u'W_j) - sum_c v_c (v_c'W_j)
                 W_j <- W_j - (1/t_j) (lam_j W_j + z_j - g_j / k)   (refused if not finite, as in the learner)

The shrinks (one SVD per ``l`` or more inserts), which dominate at large ``l``, are paid once
instead of ``G`` times. It equals ``G`` separate learners up to the rounding of a matrix product
against matrix-vector products (tested to 1e-9 in ``tests/research/test_sdrogd_protocol.py``).
The protocol (:mod:`research.protocols.sdrogd`) is its one user. Its kernel calls the learners'
(``fd_insert``, ``sparse_sq_norm``) and no other: :func:`service.jit_cache.outside_kernel`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from service.jit_cache import outside_kernel
from service.learners.driver import sparse_sq_norm
from service.learners.frequent_directions import fd_insert


def grid_pass(
    X: sp.csr_matrix,
    y: np.ndarray,
    etas: np.ndarray,
    lams: np.ndarray,
    ell: int,
    *,
    batch_size: int = 60,
    printed: bool = False,
    upper: bool = False,
    flush: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One training pass over the rows of the canonical CSR ``X`` (intercept column included) for
    every member ``(etas[j], lams[j])``; ``flush`` steps on the last partial batch.

    Returns ``(W, steps, refused)``: the final weights (``G x d``) and each member's step counts."""
    return _grid_pass(
        X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, np.asarray(y, dtype=np.int64),
        np.asarray(etas, dtype=np.float64), np.asarray(lams, dtype=np.float64), printed, upper,
        batch_size, ell, flush, X.shape[1],
    )  # fmt: skip


@outside_kernel
def _grid_pass(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, ys: np.ndarray,
               etas: np.ndarray, lams: np.ndarray, printed: bool, upper: bool, batch: int, ell: int,
               flush: bool, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    n_members = etas.shape[0]
    W = np.zeros((n_members, d))
    acc = np.zeros((n_members, d))
    B = np.zeros((2 * ell, d))
    sums = np.zeros((3, d))
    steps = np.zeros(n_members, dtype=np.int64)
    refused = np.zeros(n_members, dtype=np.int64)
    filled, k, n_pos, n_neg = 0, 0, 0, 0
    for i in range(ys.shape[0]):
        a, b = indptr[i], indptr[i + 1]
        idx, val = indices[a:b], data[a:b]
        y = ys[i]
        if not np.isfinite(sparse_sq_norm(val)):  # skipped whole, as the learner does
            continue
        for j in range(n_members):
            s = 0.0
            for q in range(idx.shape[0]):
                s += W[j, idx[q]] * val[q]
            if 1.0 - y * s > 0.0:
                for q in range(idx.shape[0]):
                    acc[j, idx[q]] += y * val[q]
        k += 1
        c = 1 if y > 0 else 2
        if y > 0:
            n_pos += 1
        else:
            n_neg += 1
        for q in range(idx.shape[0]):
            sums[0, idx[q]] += val[q]
            sums[c, idx[q]] += val[q]
        filled = fd_insert(B, filled, idx, val)
        if k == batch:
            _step_all(W, acc, B, sums, filled, k, n_pos, n_neg, etas, lams, printed, upper, steps, refused)
            k = 0
    if flush and k > 0:
        _step_all(W, acc, B, sums, filled, k, n_pos, n_neg, etas, lams, printed, upper, steps, refused)
    return W, steps, refused


@outside_kernel
def _step_all(W: np.ndarray, acc: np.ndarray, B: np.ndarray, sums: np.ndarray, filled: int, k: int,
              n_pos: int, n_neg: int, etas: np.ndarray, lams: np.ndarray, printed: bool, upper: bool,
              steps: np.ndarray, refused: np.ndarray) -> None:  # fmt: skip
    n = float(n_pos + n_neg)
    u = sums[0] / n
    d = W.shape[1]
    v_pos = np.zeros(d)
    v_neg = np.zeros(d)
    if n_pos > 0:
        v_pos = math.sqrt(n_pos / n) * (sums[1] / n_pos - u)
    if n_neg > 0:
        v_neg = math.sqrt(n_neg / n) * (sums[2] / n_neg - u)
    rows = min(filled, B.shape[0] // 2) if upper else filled
    Bs = B[:rows]
    BtBW = Bs.T @ (Bs @ W.T)  # d x G
    uw = W @ u
    pw = W @ v_pos
    nw = W @ v_neg
    for j in range(W.shape[0]):
        eta = etas[j]
        mean_weight = 1.0 if printed else eta
        w = W[j]
        z = eta * BtBW[:, j] / n - mean_weight * u * uw[j]
        if n_pos > 0:
            z = z - v_pos * pw[j]
        if n_neg > 0:
            z = z - v_neg * nw[j]
        t = steps[j] + 1
        new = w - (1.0 / t) * (lams[j] * w + z - acc[j] / k)
        if np.all(np.isfinite(new)):
            W[j] = new
            steps[j] = t
        else:
            refused[j] += 1
    acc[:] = 0.0
