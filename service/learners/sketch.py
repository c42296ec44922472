"""SACOG and SSACOG: ACOG with an Oja sketch of the covariance.

``inv(Sigma_t) = I + sum_i x_i x_i^T / gamma`` is approximated by a rank-``m`` sketch
``S^T S``, so ``Sigma = I - S^T H S`` with ``H = inv(I_m + S S^T)``. With ``xh = x / sqrt(gamma)``,
Oja's rule keeps eigenvalue estimates ``Lam`` and orthonormal directions ``V`` (m x d,
init ``e_1..e_m``). Every labelled round (whatever the loss)::

    t <- t + 1;  step = 1 / t;  p = V xh
    Lam <- (1 - step) Lam + step p**2
    V   <- orth_rows(V + step p xh^T)

and, when the loss is positive, with ``coef = t Lam / (1 + t Lam)``::

    mu <- mu - eta (g - V^T (coef * (V g)))

**SACOG** stores ``V`` and ``mu`` densely: O(m^2 d) per round. **SSACOG** never forms
them: ``V = F Z`` (F is m x m, Z only changes on the support of x, ``K = Z Z^T``) and
``mu = w + Z^T b``, so a round costs O(m s + m^3) for ``s = nnz(x)``::

    zx = Z xh;  t <- t + 1;  step = 1 / t;  p = F zx;  Lam <- (1 - step) Lam + step p**2
    delta = step zx
    K <- K + zx delta^T + delta zx^T + (xh.xh) delta delta^T
    Z <- Z + delta xh^T
    F <- orth_rows(F) in the inner product <a, b> = a^T K b
    w <- w - xh (delta . b)                                  (every round: keeps mu fixed)
    if loss > 0:  b <- b + eta F^T (coef * (F (Z g)));  w <- w - eta g

Every ``remat_every`` rounds SSACOG re-materialises (``V = F Z``, ``b <- F^-T b``,
``Z <- V``, ``F <- I``, ``K <- I``): O(m^2 d), rare, and it changes no prediction. The
default, ``"auto"``, is ``max(10^4, d / 10)`` rounds, so the amortised cost stays O(m^2)
per update whatever d is (measured: without any re-materialisation F's condition number
is still 1.002 after 200,000 rounds, because Oja's steps shrink as 1/t). In exact
arithmetic SACOG and SSACOG produce the same ``mu`` from the same initial directions;
the test suite checks that to 1e-8.

Both orthonormalisations are classical Gram-Schmidt applied twice ("twice is enough"),
rows in order, positive norms; a row whose norm vanishes is set to zero (dropped).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..jit_cache import kernel
from .acog import SECOND_ORDER_PARAMS, ACOGParams, second_order_params
from .base import Learner, positive_int
from .driver import sparse_dot
from .errors import InvalidParameter
from .losses import cost_sensitive_loss

# ---------------------------------------------------------------- Gram-Schmidt, twice


@kernel
def orthonormalise_rows(V: np.ndarray) -> None:
    """Rows of V orthonormal in the Euclidean inner product, in place (dense, O(m^2 d))."""
    m = V.shape[0]
    for i in range(m):
        for _ in range(2):
            alpha = V[:i] @ V[i]
            for j in range(i):
                V[i] -= alpha[j] * V[j]
        norm = np.sqrt(V[i] @ V[i])
        if norm > 0.0:
            V[i] /= norm
        else:
            V[i] = 0.0


@kernel
def orthonormalise_rows_in(F: np.ndarray, K: np.ndarray) -> None:
    """Rows of F orthonormal in ``<a, b> = a^T K b``, in place (the paper's Decompose, O(m^3)).

    Written as plain loops: for m ~ 5, BLAS calls and temporaries would cost more than the
    arithmetic.
    """
    m = F.shape[0]
    kf = np.empty(m)
    alpha = np.empty(m)
    for i in range(m):
        f = F[i]
        for _ in range(2):
            for a in range(m):  # kf = K f
                acc = 0.0
                for j in range(m):
                    acc += K[a, j] * f[j]
                kf[a] = acc
            for j in range(i):  # alpha_j = <q_j, f>
                acc = 0.0
                for a in range(m):
                    acc += F[j, a] * kf[a]
                alpha[j] = acc
            for j in range(i):  # f <- f - sum_j alpha_j q_j
                for a in range(m):
                    f[a] -= alpha[j] * F[j, a]
        norm2 = 0.0
        for a in range(m):
            acc = 0.0
            for j in range(m):
                acc += K[a, j] * f[j]
            norm2 += f[a] * acc
        if norm2 > 0.0:
            norm = np.sqrt(norm2)
            for a in range(m):
                f[a] /= norm
        else:
            f[:] = 0.0


# ---------------------------------------------------------------- SACOG (dense)

SACOGState = namedtuple("SACOGState", ["counts", "w", "V", "lam", "t"])


@kernel
def sacog_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    return sparse_dot(st.w, idx, val)


@kernel
def sacog_update(st: Any, p: ACOGParams, idx: np.ndarray, val: np.ndarray, y: int,
                 score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    eta, gamma = p.eta, p.gamma
    mu, V, lam, tt = st.w, st.V, st.lam, st.t
    m = V.shape[0]
    loss, c = cost_sensitive_loss(p.loss, y, score, rho)

    xh = val / np.sqrt(gamma)
    tt[0] += 1
    t = float(tt[0])
    step = 1.0 / t
    pv = np.zeros(m)
    for a in range(m):
        for k in range(idx.shape[0]):
            pv[a] += V[a, idx[k]] * xh[k]
    for a in range(m):
        lam[a] = (1.0 - step) * lam[a] + step * pv[a] * pv[a]
        for k in range(idx.shape[0]):
            V[a, idx[k]] += step * pv[a] * xh[k]
    orthonormalise_rows(V)

    if loss <= 0.0:
        return loss, False
    # mu <- mu - eta (g - V^T (coef * V g)) with g = -c y x
    scaled = np.zeros(m)
    for a in range(m):
        vx = 0.0
        for k in range(idx.shape[0]):
            vx += V[a, idx[k]] * val[k]
        scaled[a] = t * lam[a] / (1.0 + t * lam[a]) * vx
    step_size = eta * c * y
    for k in range(idx.shape[0]):
        mu[idx[k]] += step_size * val[k]
    mu -= step_size * (V.T @ scaled)
    return loss, True


# ---------------------------------------------------------------- SSACOG (sparse, factored)
# ZT is Z transposed (d x m), so that a feature's column of Z is contiguous;
# clock = [t, rounds since the last re-materialisation].

SSACOGState = namedtuple("SSACOGState", ["counts", "w", "ZT", "F", "K", "b", "lam", "clock"])


class SSACOGParams(NamedTuple):
    """:class:`~service.learners.acog.ACOGParams` and the re-materialisation period."""

    eta: float
    gamma: float
    loss: int  # a Loss
    remat_every: int  # rounds between re-materialisations


@kernel
def z_times(ZT: np.ndarray, idx: np.ndarray, val: np.ndarray, scale: float, out: np.ndarray) -> None:
    """``out = Z x / scale`` over the support of x: O(m s)."""
    out[:] = 0.0
    for k in range(idx.shape[0]):
        row = ZT[idx[k]]
        xk = val[k] / scale
        for a in range(out.shape[0]):
            out[a] += row[a] * xk


@kernel
def ssacog_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    """``mu . x = w . x + b . (Z x)``."""
    zx = np.empty(st.b.shape[0])
    z_times(st.ZT, idx, val, 1.0, zx)
    return sparse_dot(st.w, idx, val) + st.b @ zx


@kernel
def rematerialise(st: Any) -> bool:
    """``V = F Z``, ``b <- F^-T b``, ``Z <- V``, ``F <- I``, ``K <- I`` (skipped if F is singular)."""
    ZT, F, K, b = st.ZT, st.F, st.K, st.b
    m = F.shape[0]
    for a in range(m):
        if F[a, a] == 0.0:
            return False
    # F is lower triangular (Gram-Schmidt only mixes in earlier rows), so F^T b' = b is
    # solved by back substitution.
    new_b = np.zeros(m)
    for a in range(m - 1, -1, -1):
        s = b[a]
        for j in range(a + 1, m):
            s -= F[j, a] * new_b[j]
        new_b[a] = s / F[a, a]
    row = np.empty(m)
    for j in range(ZT.shape[0]):  # Z <- F Z, one feature's column at a time, in place
        for a in range(m):
            acc = 0.0
            for c in range(m):
                acc += F[a, c] * ZT[j, c]
            row[a] = acc
        ZT[j, :] = row
    b[:] = new_b
    F[:, :] = np.eye(m)
    K[:, :] = np.eye(m)
    return True


@kernel
def ssacog_update(st: Any, p: SSACOGParams, idx: np.ndarray, val: np.ndarray, y: int,
                  score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    eta, gamma, remat_every = p.eta, p.gamma, p.remat_every
    w, ZT, F, K, b, lam, clock = st.w, st.ZT, st.F, st.K, st.b, st.lam, st.clock
    m = F.shape[0]
    loss, c = cost_sensitive_loss(p.loss, y, score, rho)
    sqrt_gamma = np.sqrt(gamma)

    zx = np.empty(m)
    z_times(ZT, idx, val, sqrt_gamma, zx)  # Z xh with the old Z
    xhxh = 0.0
    for k in range(idx.shape[0]):
        xk = val[k] / sqrt_gamma
        xhxh += xk * xk
    clock[0] += 1
    t = float(clock[0])
    step = 1.0 / t
    delta = np.empty(m)
    for a in range(m):
        pa = 0.0  # p = F zx = V_old xh
        for j in range(m):
            pa += F[a, j] * zx[j]
        lam[a] = (1.0 - step) * lam[a] + step * pa * pa
        delta[a] = step * zx[a]
    for a in range(m):  # K <- K + zx delta^T + delta zx^T + (xh.xh) delta delta^T, exactly symmetric
        for j in range(m):
            K[a, j] += (zx[a] * delta[j] + delta[a] * zx[j]) + xhxh * (delta[a] * delta[j])
    db = 0.0
    for a in range(m):
        db += delta[a] * b[a]
    for k in range(idx.shape[0]):  # Z <- Z + delta xh^T, and w <- w - xh (delta . b)
        xk = val[k] / sqrt_gamma
        row = ZT[idx[k]]
        for a in range(m):
            row[a] += delta[a] * xk
        w[idx[k]] -= xk * db
    orthonormalise_rows_in(F, K)

    if loss > 0.0:
        zg = np.empty(m)
        z_times(ZT, idx, val, 1.0, zg)  # Z x with the new Z (Z g = -c y Z x)
        fz = np.empty(m)
        for a in range(m):  # fz = coef * (F Z x)
            acc = 0.0
            for j in range(m):
                acc += F[a, j] * zg[j]
            fz[a] = t * lam[a] / (1.0 + t * lam[a]) * acc
        step_size = eta * c * y
        for j in range(m):  # b <- b + eta F^T (coef * (F (Z g)))
            acc = 0.0
            for a in range(m):
                acc += F[a, j] * fz[a]
            b[j] -= step_size * acc
        for k in range(idx.shape[0]):  # w <- w - eta g
            w[idx[k]] += step_size * val[k]

    clock[1] += 1
    if clock[1] >= remat_every:
        rematerialise(st)
        clock[1] = 0
    return loss, loss > 0.0


# ---------------------------------------------------------------- the learner classes


def remat_period(value: Any) -> int | str:
    if value == "auto":
        return "auto"
    return positive_int("remat_every")(value)


class _Sketched(Learner):
    own_params: ClassVar = {**SECOND_ORDER_PARAMS, "sketch_size": (5, positive_int("sketch_size"))}

    def _check_params(self) -> None:
        m = self.params["sketch_size"]
        if m > self.dim:
            raise InvalidParameter("sketch_size", f"must be <= the dimension ({self.dim}), got {m}")

    def _initial_directions(self) -> np.ndarray:
        """``e_1 .. e_m`` as rows (the [decision]: deterministic initial directions)."""
        return np.eye(self.params["sketch_size"], self.dim)


class SACOG(_Sketched):
    """Dense Oja-sketched ACOG: O(m^2 d) per round. The reference model for SSACOG."""

    algorithm = "sacog"
    state_type = SACOGState
    params_type = ACOGParams
    kernels = (sacog_score, sacog_update)

    def kernel_params(self) -> ACOGParams:
        return second_order_params(self.params)

    def describe(self) -> dict[str, Any]:
        sketch = {"size": self.params["sketch_size"], "rounds": int(self._arrays["t"][0])}
        return {
            **super().describe(),
            "sketch": {**sketch, "eigenvalue_estimates": self._arrays["lam"].tolist()},
        }

    def _init_arrays(self) -> dict[str, np.ndarray]:
        m = self.params["sketch_size"]
        return {
            "w": np.zeros(self.dim),
            "V": self._initial_directions(),
            "lam": np.zeros(m),
            "t": np.zeros(1, dtype=np.int64),
        }


class SSACOG(_Sketched):
    """Sparse Oja-sketched ACOG: O(m nnz(x) + m^3) per round, never O(d) (but for the rare
    re-materialisation every ``remat_every`` rounds)."""

    algorithm = "ssacog"
    own_params: ClassVar = {**_Sketched.own_params, "remat_every": ("auto", remat_period)}
    state_type = SSACOGState
    params_type = SSACOGParams
    kernels = (ssacog_score, ssacog_update)

    def kernel_params(self) -> SSACOGParams:
        period = self.params["remat_every"]
        if period == "auto":
            period = max(10_000, self.dim // 10)
        return SSACOGParams(*second_order_params(self.params), remat_every=int(period))

    def describe(self) -> dict[str, Any]:
        rounds, since = (int(c) for c in self._arrays["clock"])
        sketch = {
            "size": self.params["sketch_size"],
            "rounds": rounds,
            "eigenvalue_estimates": self._arrays["lam"].tolist(),
            "remat_every": self.kernel_params().remat_every,
            "rounds_since_remat": since,
        }
        return {**super().describe(), "sketch": sketch}

    def _init_arrays(self) -> dict[str, np.ndarray]:
        m = self.params["sketch_size"]
        return {
            "w": np.zeros(self.dim),
            "ZT": np.ascontiguousarray(self._initial_directions().T),
            "F": np.eye(m),
            "K": np.eye(m),
            "b": np.zeros(m),
            "lam": np.zeros(m),
            "clock": np.zeros(2, dtype=np.int64),
        }

    def weights(self) -> np.ndarray:
        """``mu = w + Z^T b`` (O(m d): for inspection, never on the hot path)."""
        return self._arrays["w"] + self._arrays["ZT"] @ self._arrays["b"]
