"""First-order learners: COG and the paper's classic baselines.

All keep one weight vector ``w`` (init 0), predict ``sign(w . x)`` with ``sign(0) = +1``,
and touch only the support of ``x``: O(nnz(x)) per round. State tuple: ``(counts, w)``
(ROMMA adds ``(scale, ||w||^2)``, see :class:`ROMMA`).

=========== ==================================================================================
Perceptron  on a mistake: ``w <- w + y x``
PA-I        ``l = max(0, 1 - y w.x)``, ``tau = min(C, l / ||x||^2)``, ``w <- w + tau y x``
PAUM        when ``y w.x <= tau_y`` (``tau_+1 = rho``, ``tau_-1 = 1``): ``w <- w + y x``
CPA-PB      on a mistake: ``l = sqrt(c_y) - y w.x`` (``c_+1 = rho``, ``c_-1 = 1``),
            ``tau = l / ||x||^2``, ``w <- w + tau y x``
COG-I/II    ``w <- w - eta g`` with the loss-I / loss-II gradient ``g = -c y x``
ROMMA       on a mistake, the minimum-norm ``w`` with ``w.w_old >= ||w_old||^2`` and ``y w.x >= 1``
=========== ==================================================================================
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..jit_cache import kernel
from .base import Learner, loss_kind, positive
from .driver import NoParams, sparse_dot, sparse_sq_norm
from .losses import Loss, cost_sensitive_loss

# One state type per algorithm: the driver picks the kernels by the state's type.
PerceptronState = namedtuple("PerceptronState", ["counts", "w"])
PA1State = namedtuple("PA1State", ["counts", "w"])
PAUMState = namedtuple("PAUMState", ["counts", "w"])
CPAPBState = namedtuple("CPAPBState", ["counts", "w"])
COGState = namedtuple("COGState", ["counts", "w"])
ROMMAState = namedtuple("ROMMAState", ["counts", "w", "scale_norm"])


class PA1Params(NamedTuple):
    C: float  # the aggressiveness cap on tau


class COGParams(NamedTuple):
    eta: float  # the paper's lambda
    loss: int  # a Loss


@kernel
def linear_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    return sparse_dot(st.w, idx, val)


LINEAR_SCORES_WIDTH = 16
"""The weight vectors one :func:`linear_scores` call takes: a longer group goes in several calls
and a shorter one is padded, so that one tuple length (one compiled specialisation) serves every
roster."""


@kernel
def linear_scores(ws: Any, n: int, idx: np.ndarray, val: np.ndarray, at: np.ndarray, out: np.ndarray) -> None:
    """``out[at[k]] = ws[k] . x`` for ``k < n``: the sums :func:`linear_score` makes, one member
    after the other in one call instead of one call a member. ``ws`` is a tuple of
    :data:`LINEAR_SCORES_WIDTH` weight vectors (the first ``n`` read)."""
    for k in range(n):
        out[at[k]] = sparse_dot(ws[k], idx, val)


@kernel
def add_scaled(w: np.ndarray, idx: np.ndarray, val: np.ndarray, coef: float) -> None:
    """``w <- w + coef x`` on the support of x."""
    for k in range(idx.shape[0]):
        w[idx[k]] += coef * val[k]


@kernel
def perceptron_update(st: Any, p: NoParams, idx: np.ndarray, val: np.ndarray, y: int,
                      score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    if (1 if score >= 0.0 else -1) == y:
        return 0.0, False
    add_scaled(st.w, idx, val, float(y))
    return 1.0, True


@kernel
def pa1_update(st: Any, p: PA1Params, idx: np.ndarray, val: np.ndarray, y: int,
               score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    loss = max(0.0, 1.0 - y * score)
    xx = sparse_sq_norm(val)
    if loss <= 0.0 or xx == 0.0:
        return loss, False
    tau = min(p.C, loss / xx)
    add_scaled(st.w, idx, val, tau * y)
    return loss, True


@kernel
def paum_update(st: Any, p: NoParams, idx: np.ndarray, val: np.ndarray, y: int,
                score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    tau_y = rho if y > 0 else 1.0
    if y * score > tau_y:
        return 0.0, False
    add_scaled(st.w, idx, val, float(y))
    return tau_y - y * score, True


@kernel
def cpapb_update(st: Any, p: NoParams, idx: np.ndarray, val: np.ndarray, y: int,
                 score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    if (1 if score >= 0.0 else -1) == y:
        return 0.0, False
    cost_y = rho if y > 0 else 1.0
    loss = np.sqrt(cost_y) - y * score
    xx = sparse_sq_norm(val)
    if xx == 0.0:
        return loss, False
    add_scaled(st.w, idx, val, loss / xx * y)
    return loss, True


@kernel
def cog_update(st: Any, p: COGParams, idx: np.ndarray, val: np.ndarray, y: int,
               score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    loss, c = cost_sensitive_loss(p.loss, y, score, rho)
    if loss <= 0.0:
        return loss, False
    add_scaled(st.w, idx, val, p.eta * c * y)
    return loss, True


class Perceptron(Learner):
    """Rosenblatt's perceptron, mistake-driven: ``w <- w + y x`` when ``sign(w.x) != y``.

    ``loss`` in the update info is the 0-1 loss that drives it.
    """

    algorithm = "perceptron"
    cost_sensitive = False
    state_type = PerceptronState
    kernels = (linear_score, perceptron_update)

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim)}


class PA1(Learner):
    """Passive-Aggressive I (Crammer et al. 2006).

    ``l = max(0, 1 - y w.x)``; ``tau = min(C, l / ||x||^2)``; ``w <- w + tau y x``.
    """

    algorithm = "pa1"
    cost_sensitive = False
    own_params: ClassVar = {"C": (1.0, positive("C"))}
    state_type = PA1State
    params_type = PA1Params
    kernels = (linear_score, pa1_update)

    def kernel_params(self) -> PA1Params:
        return PA1Params(C=float(self.params["C"]))

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim)}


class PAUM(Learner):
    """Perceptron with uneven margins (Li et al. 2002).

    Update ``w <- w + y x`` whenever ``y w.x <= tau_y``, with ``tau_+1 = rho`` and
    ``tau_-1 = 1`` (the margins the ACOG paper's tables imply).
    """

    algorithm = "paum"
    state_type = PAUMState
    kernels = (linear_score, paum_update)

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim)}


class CPAPB(Learner):
    """Cost-sensitive PA, prediction-based (Crammer et al. 2006), binary form.

    On a mistake: ``l = sqrt(c_y) - y w.x`` with ``c_+1 = rho`` and ``c_-1 = 1``;
    ``w <- w + (l / ||x||^2) y x``.
    """

    algorithm = "cpapb"
    state_type = CPAPBState
    kernels = (linear_score, cpapb_update)

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim)}


class COG(Learner):
    """Cost-sensitive online gradient descent (Wang, Zhao, Hoi 2012).

    ``w <- w - eta g`` where ``g = -y x`` (loss I, ``l = max(0, rho_y - y w.x)``) or
    ``g = -rho_y y x`` (loss II, ``l = rho_y max(0, 1 - y w.x)``). ``eta`` is the paper's
    lambda.
    """

    algorithm = "cog"
    own_params: ClassVar = {"eta": (1.0, positive("eta")), "loss": ("II", loss_kind)}
    state_type = COGState
    params_type = COGParams
    kernels = (linear_score, cog_update)

    def kernel_params(self) -> COGParams:
        return COGParams(eta=float(self.params["eta"]), loss=int(Loss[self.params["loss"]]))

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim)}


# --- ROMMA --------------------------------------------------------------------------------
# w is held as scale * v with ||w||^2 tracked, so that the update w <- c w + d x costs
# O(nnz(x)) instead of O(d). When scale drifts out of range, v is rescaled once (O(d)).

_SCALE_LIMIT = 1e100


@kernel
def romma_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    return st.scale_norm[0] * sparse_dot(st.w, idx, val)


@kernel
def romma_update(st: Any, p: NoParams, idx: np.ndarray, val: np.ndarray, y: int,
                 score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    if (1 if score >= 0.0 else -1) == y:
        return 0.0, False
    v, aux = st.w, st.scale_norm
    xx = sparse_sq_norm(val)
    if xx == 0.0:
        return 1.0, False
    ww = aux[1]
    if ww == 0.0:  # w = 0: w <- y x / ||x||^2
        v[:] = 0.0
        aux[0] = 1.0
        add_scaled(v, idx, val, y / xx)
        aux[1] = 1.0 / xx
        return 1.0, True
    wx = score  # the docstring's p = w.x
    den = xx * ww - wx * wx
    if den <= 0.0:  # x parallel to w: the ROMMA step is undefined
        return 1.0, False
    c = (xx * ww - y * wx) / den
    d = ww * (y - wx) / den
    new_scale = c * aux[0]
    if new_scale == 0.0 or abs(new_scale) > _SCALE_LIMIT or abs(new_scale) < 1.0 / _SCALE_LIMIT:
        v *= aux[0]  # materialise w, then apply the step directly
        v *= c
        aux[0] = 1.0
        add_scaled(v, idx, val, d)
    else:
        aux[0] = new_scale
        add_scaled(v, idx, val, d / new_scale)
    aux[1] = c * c * ww + 2.0 * c * d * wx + d * d * xx
    return 1.0, True


class ROMMA(Learner):
    """Relaxed online maximum margin algorithm (Li and Long 2000).

    On a mistake, with ``W = ||w||^2``, ``X = ||x||^2``, ``p = w.x``: if ``w = 0`` then
    ``w <- y x / X``; else ``w <- c w + d x`` with ``c = (X W - y p) / (X W - p^2)`` and
    ``d = W (y - p) / (X W - p^2)``.
    """

    algorithm = "romma"
    cost_sensitive = False
    state_type = ROMMAState
    kernels = (romma_score, romma_update)

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim), "scale_norm": np.array([1.0, 0.0])}

    def weights(self) -> np.ndarray:
        return self._arrays["w"] * self._arrays["scale_norm"][0]
