"""Feature maps ``z = phi(x)`` that give a linear learner nonlinear capacity, and the update in the
mapped space. The learners built on them are in :mod:`service.learners.nonlinear`.

``x`` is the canonical sparse input without the intercept (indices ``< n_in``); the intercept,
when the learner has one, is *not* mapped: it becomes the last coordinate of ``z`` as it is.

- **quadratic** (explicit degree-2 polynomial features)::

      z = [x_1, ..., x_d,  x_i^2 (i = j),  sqrt(2) x_i x_j (i < j)]

  so that ``z . z' = x . x' + (x . x')^2``; ``D = d + d (d + 1) / 2`` coordinates, pair ``(i, j)``,
  ``i <= j``, at ``d + i d - i (i - 1) / 2 + (j - i)``. O(nnz(x)^2) per map.
- **rff** (random Fourier features, Rahimi & Recht 2007; the FOGD of Lu et al. 2016)::

      z_k = sqrt(2 / D) cos(omega_k . x + b_k),   omega_k ~ N(0, I / sigma^2),  b_k ~ U[0, 2 pi)

  so that ``E[z . z'] = exp(-||x - x'||^2 / (2 sigma^2))`` (the Gaussian kernel of bandwidth
  ``sigma``). ``omega`` and ``b`` are drawn from ``numpy.random.default_rng(seed)`` when the learner
  is made and are part of its state. O(D nnz(x)) per map.
- **nystrom** (NOGD of Lu et al. 2016, the SDROGD paper's baseline) over a budget of ``B`` kept
  examples ``l_1..l_B`` and the same Gaussian kernel ``k``. While fewer than ``B`` are kept the
  model is kernel OGD: ``z_j = k(x, l_j)`` over the kept examples, and an update keeps ``x`` as
  ``l_{m+1}`` with coefficient ``w_{m+1} = eta c y`` (the functional gradient step
  ``f <- f + eta c y k(x, .)``). When the ``B``-th is kept, ``K = [k(l_i, l_j)] = U Lambda U'``
  and from then on::

      z = P [k(x, l_1), ..., k(x, l_B)],   P = Lambda^{-1/2} U'   (rows with lambda_j <= 1e-10
                                                                  lambda_max are 0)
      w <- Lambda^{1/2} U' w                                      (the same function f, once)

  so ``z . z' = k_x' K^+ k_x'``, the Nystrom approximation of ``k(x, x')``. A second-order
  update's Sigma restarts at I at that moment [decision: Sigma over the raw kernel coordinates
  does not carry over to a well-conditioned Sigma in the new ones]. No randomness: the kept
  examples are the first ``B`` that caused an update. O(B nnz(x) + B^2) per map.

**The update in the mapped space** (``order``): with the cost-sensitive loss of
:mod:`service.learners.losses` (``g = -c y z`` when the loss is positive)

- ``0``, OGD: ``w <- w + eta c y z``;
- ``1``, ACOG-diag: ``s_j <- 1 / (1 / s_j + z_j^2 / gamma)``, ``w_j <- w_j + eta c y s_j z_j``;
- ``2``, ACOG (full): ``u = Sigma z``, ``Sigma <- Sigma - u u' / (gamma + z'u)``,
  ``w <- w + eta c y gamma u / (gamma + z'u)`` (as :mod:`service.learners.acog`, dense ``z``).

Everything runs in the kernels, so ``learn`` and ``run`` take the same steps bit for bit and the
state (``w``, ``sigma``, the map's arrays) is all a replica or a recovery needs.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..jit_cache import kernel
from .covariance import sigma_x_and_quadratic, subtract_outer
from .losses import cost_sensitive_loss

OGD, DIAG, FULL = 0, 1, 2
ORDERS = {"ogd": OGD, "acog-diag": DIAG, "acog": FULL}
"""The ``update`` parameter: the learner run over ``z``."""
EIGEN_FLOOR = 1e-10
SQRT2 = math.sqrt(2.0)


class MapParams(NamedTuple):
    """What a mapped update reads. The map's own constants are in the state (``layout`` =
    ``[n_in, n_map]``: input features, the intercept being index ``n_in``; mapped coordinates,
    the intercept being coordinate ``n_map``; and ``width``, the Gaussian bandwidth), so that the
    score kernel, which takes no params, reads them too."""

    eta: float
    gamma: float
    loss: int  # a Loss
    order: int  # OGD, DIAG or FULL


def quadratic_dim(d: int) -> int:
    """``D = d + d (d + 1) / 2``."""
    return d + d * (d + 1) // 2


@kernel
def intercept_into(z: np.ndarray, idx: np.ndarray, val: np.ndarray, n_in: int, n_map: int) -> None:
    """The intercept entry of ``x`` (index ``n_in``), if any, as ``z[n_map]``."""
    for a in range(idx.shape[0]):
        if idx[a] >= n_in:
            z[n_map] = val[a]


@kernel
def quadratic_map(st: Any, idx: np.ndarray, val: np.ndarray) -> np.ndarray:
    return quadratic_map_of(st.w.shape[0], st.layout, idx, val)


@kernel
def quadratic_map_of(n_out: int, layout: np.ndarray, idx: np.ndarray, val: np.ndarray) -> np.ndarray:
    """``phi(x)`` (``n_out`` long: ``layout = [d, D]``, the intercept at ``D`` when ``n_out > D``):
    the linear terms, then ``x_i x_j`` for ``i <= j`` (``sqrt 2`` off the diagonal), row-major."""
    z = np.zeros(n_out)
    d = layout[0]
    for a in range(idx.shape[0]):
        i = idx[a]
        if i >= d:
            continue
        z[i] = val[a]
        for b in range(idx.shape[0]):
            j = idx[b]
            if j < i or j >= d:
                continue
            pos = d + i * d - (i * (i - 1)) // 2 + (j - i)
            z[pos] = val[a] * val[b] * (1.0 if i == j else SQRT2)
    intercept_into(z, idx, val, layout[0], layout[1])
    return z


@kernel
def rff_map(st: Any, idx: np.ndarray, val: np.ndarray) -> np.ndarray:
    z = np.zeros(st.w.shape[0])
    omega = st.omega
    n_in, n_map = st.layout[0], st.layout[1]
    scale = math.sqrt(2.0 / n_map)
    for k in range(n_map):
        s = st.phase[k]
        for a in range(idx.shape[0]):
            if idx[a] < n_in:
                s += omega[k, idx[a]] * val[a]
        z[k] = scale * math.cos(s)
    intercept_into(z, idx, val, st.layout[0], st.layout[1])
    return z


@kernel
def gaussian_row(st: Any, idx: np.ndarray, val: np.ndarray) -> np.ndarray:
    """``k(x, l_j)`` for the kept examples (0 beyond)."""
    n_in = st.layout[0]
    kv = np.zeros(st.layout[1])
    sq = 0.0
    for a in range(idx.shape[0]):
        if idx[a] < n_in:
            sq += val[a] * val[a]
    two_s2 = 2.0 * st.width[0] * st.width[0]
    for j in range(st.tally[0]):
        dot = 0.0
        for a in range(idx.shape[0]):
            if idx[a] < n_in:
                dot += st.landmarks[j, idx[a]] * val[a]
        dist = max(0.0, sq + st.sq_norms[j] - 2.0 * dot)
        kv[j] = math.exp(-dist / two_s2)
    return kv


@kernel
def nystrom_map(st: Any, idx: np.ndarray, val: np.ndarray) -> np.ndarray:
    z = np.zeros(st.w.shape[0])
    kv = gaussian_row(st, idx, val)
    n_map = st.layout[1]
    if st.tally[1]:
        for r in range(n_map):
            s = 0.0
            for j in range(n_map):
                s += st.proj[r, j] * kv[j]
            z[r] = s
    else:
        z[:n_map] = kv
    intercept_into(z, idx, val, st.layout[0], st.layout[1])
    return z


@kernel
def mapped_step(st: Any, p: MapParams, z: np.ndarray, coef: float) -> None:
    """One step of the learner over ``z`` with ``g = -coef z`` (``coef = c y``)."""
    w = st.w
    n = w.shape[0]
    if p.order == OGD:
        for j in range(n):
            w[j] += p.eta * coef * z[j]
    elif p.order == DIAG:
        s = st.sigma[0]
        for j in range(n):
            if z[j] != 0.0:
                s[j] = 1.0 / (1.0 / s[j] + z[j] * z[j] / p.gamma)
                w[j] += p.eta * coef * s[j] * z[j]
    else:
        dense = np.arange(n)
        u, v = sigma_x_and_quadratic(st.sigma, dense, z)
        den = p.gamma + v
        subtract_outer(st.sigma, u, 1.0 / den)
        step = p.eta * coef * p.gamma / den
        for j in range(n):
            w[j] += step * u[j]


@kernel
def dense_dot(w: np.ndarray, z: np.ndarray) -> float:
    """``w . z`` summed in index order (no BLAS: the same bits everywhere)."""
    s = 0.0
    for j in range(w.shape[0]):
        s += w[j] * z[j]
    return s


@kernel
def nystrom_project(st: Any) -> None:
    """``K = U Lambda U'`` of the ``B`` kept examples: ``P = Lambda^{-1/2} U'``,
    ``w <- Lambda^{1/2} U' w`` (the intercept weight stays), Sigma back to I."""
    b = st.layout[1]
    K = np.empty((b, b))
    two_s2 = 2.0 * st.width[0] * st.width[0]
    for i in range(b):
        for j in range(b):
            dot = 0.0
            for c in range(st.landmarks.shape[1]):
                dot += st.landmarks[i, c] * st.landmarks[j, c]
            dist = max(0.0, st.sq_norms[i] + st.sq_norms[j] - 2.0 * dot)
            K[i, j] = math.exp(-dist / two_s2)
    lam, U = np.linalg.eigh(K)
    top = lam.max()
    w_old = st.w[:b].copy()
    for r in range(b):
        keep = lam[r] > EIGEN_FLOOR * top
        root = math.sqrt(lam[r]) if keep else 0.0
        proj = 0.0
        for j in range(b):
            st.proj[r, j] = U[j, r] / root if keep else 0.0
            proj += U[j, r] * w_old[j]
        st.w[r] = root * proj
    sigma = st.sigma
    for i in range(sigma.shape[0]):
        for j in range(sigma.shape[1]):
            sigma[i, j] = 1.0 if (i == j or sigma.shape[0] == 1) else 0.0
    st.tally[1] = 1


@kernel
def quadratic_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    return dense_dot(st.w, quadratic_map(st, idx, val))


@kernel
def quadratic_scores(
    ws: Any, n: int, layout: np.ndarray, idx: np.ndarray, val: np.ndarray, at: np.ndarray, out: np.ndarray
) -> None:  # fmt: skip
    """``out[at[k]] = ws[k] . phi(x)`` for ``k < n``, ``phi`` mapped once for all of them: the sums
    :func:`quadratic_score` makes for members of one layout, in one call (``ws``: a tuple of weight
    vectors of the same length, the first ``n`` read)."""
    z = quadratic_map_of(ws[0].shape[0], layout, idx, val)
    for k in range(n):
        out[at[k]] = dense_dot(ws[k], z)


@kernel
def rff_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    return dense_dot(st.w, rff_map(st, idx, val))


@kernel
def nystrom_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    return dense_dot(st.w, nystrom_map(st, idx, val))


@kernel
def quadratic_update(st: Any, p: MapParams, idx: np.ndarray, val: np.ndarray, y: int,
                     score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    loss, c = cost_sensitive_loss(p.loss, y, score, rho)
    if loss <= 0.0:
        return loss, False
    mapped_step(st, p, quadratic_map(st, idx, val), c * y)
    return loss, True


@kernel
def rff_update(st: Any, p: MapParams, idx: np.ndarray, val: np.ndarray, y: int,
               score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    loss, c = cost_sensitive_loss(p.loss, y, score, rho)
    if loss <= 0.0:
        return loss, False
    mapped_step(st, p, rff_map(st, idx, val), c * y)
    return loss, True


@kernel
def nystrom_update(st: Any, p: MapParams, idx: np.ndarray, val: np.ndarray, y: int,
                   score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    loss, c = cost_sensitive_loss(p.loss, y, score, rho)
    if loss <= 0.0:
        return loss, False
    if st.tally[1]:
        mapped_step(st, p, nystrom_map(st, idx, val), c * y)
        return loss, True
    # kernel OGD while the budget fills: keep x with coefficient eta c y
    n_in, n_map = st.layout[0], st.layout[1]
    m = st.tally[0]
    sq = 0.0
    for a in range(idx.shape[0]):
        if idx[a] < n_in:
            st.landmarks[m, idx[a]] = val[a]
            sq += val[a] * val[a]
        else:
            st.w[n_map] += p.eta * c * y * val[a]
    st.sq_norms[m] = sq
    st.w[m] = p.eta * c * y
    st.tally[0] = m + 1
    if m + 1 == n_map:
        nystrom_project(st)
    return loss, True
