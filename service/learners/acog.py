"""ACOG: adaptive (second-order) cost-sensitive online gradient descent.

Zhao, Zhang, Wu, Hoi, Tan and Huang, *Adaptive Cost-Sensitive Online Classification*.
State: the mean ``mu`` (init 0) and the covariance ``Sigma`` (init I). On a round whose
cost-sensitive loss (I or II, see :mod:`service.learners.losses`) is positive::

    Sigma <- Sigma - (Sigma x)(Sigma x)^T / (gamma + x^T Sigma x)     (Sherman-Morrison)
    mu    <- mu - eta * Sigma g                                        (the NEW Sigma)

so that ``inv(Sigma_new) = inv(Sigma_old) + x x^T / gamma``. With ``u = Sigma_old x`` and
``v = x.u``, the new ``Sigma x`` is ``u gamma / (gamma + v)``, which is how the mean step
is computed. ``acog`` costs O(d^2) per update; ``acog-diag`` keeps only the diagonal
``s`` of Sigma, updated as the diagonal of the *inverse* (the AROW-diag / AdaGrad
convention, which reproduces the paper's tables)::

    s_i <- 1 / (1 / s_i + x_i^2 / gamma)        mu <- mu - eta * (s * g)

touching only the support of ``x``: O(nnz(x)).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..jit_cache import kernel
from .base import Learner, loss_kind, positive
from .covariance import (
    DEFAULT_MEMORY_BUDGET,
    check_sigma_fits,
    identity,
    memory_budget,
    sigma_x_and_quadratic,
    subtract_outer,
)
from .first_order import linear_score
from .losses import Loss, cost_sensitive_loss

ACOGState = namedtuple("ACOGState", ["counts", "w", "sigma"])
ACOGDiagState = namedtuple("ACOGDiagState", ["counts", "w", "sigma_diag"])


class ACOGParams(NamedTuple):
    """What an ACOG-family update reads (ACOG, ACOG-diag and SACOG)."""

    eta: float  # the learning rate
    gamma: float  # the regulariser of Sigma's update
    loss: int  # a Loss


@kernel
def acog_update(st: Any, p: ACOGParams, idx: np.ndarray, val: np.ndarray, y: int,
                score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    eta, gamma = p.eta, p.gamma
    loss, c = cost_sensitive_loss(p.loss, y, score, rho)
    if loss <= 0.0:
        return loss, False
    mu, sigma = st.w, st.sigma
    u, v = sigma_x_and_quadratic(sigma, idx, val)  # Sigma_old x, x^T Sigma_old x
    den = gamma + v
    subtract_outer(sigma, u, 1.0 / den)
    step = eta * c * y * gamma / den  # mu - eta Sigma_new g, with Sigma_new x = u gamma / den
    for i in range(mu.shape[0]):
        mu[i] += step * u[i]
    return loss, True


@kernel
def acog_diag_update(st: Any, p: ACOGParams, idx: np.ndarray, val: np.ndarray, y: int,
                     score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    eta, gamma = p.eta, p.gamma
    loss, c = cost_sensitive_loss(p.loss, y, score, rho)
    if loss <= 0.0:
        return loss, False
    mu, s = st.w, st.sigma_diag
    for k in range(idx.shape[0]):
        j = idx[k]
        xj = val[k]
        s[j] = 1.0 / (1.0 / s[j] + xj * xj / gamma)
        mu[j] += eta * c * y * s[j] * xj
    return loss, True


SECOND_ORDER_PARAMS: dict[str, Any] = {
    "eta": (1.0, positive("eta")),
    "gamma": (1.0, positive("gamma")),
    "loss": ("II", loss_kind),
}


def second_order_params(params: dict[str, Any]) -> ACOGParams:
    """The :class:`ACOGParams` record of checked hyper-parameters."""
    return ACOGParams(float(params["eta"]), float(params["gamma"]), int(Loss[params["loss"]]))


class ACOG(Learner):
    """ACOG with the full covariance matrix (O(d^2) time and memory)."""

    algorithm = "acog"
    own_params: ClassVar = {**SECOND_ORDER_PARAMS, "memory_budget": (DEFAULT_MEMORY_BUDGET, memory_budget)}
    state_type = ACOGState
    params_type = ACOGParams
    kernels = (linear_score, acog_update)

    def _check_params(self) -> None:
        check_sigma_fits(self.algorithm, self.dim, self.params["memory_budget"])

    def kernel_params(self) -> ACOGParams:
        return second_order_params(self.params)

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim), "sigma": identity(self.dim)}


class ACOGDiag(Learner):
    """ACOG with a diagonal covariance (O(nnz(x)) per round)."""

    algorithm = "acog-diag"
    own_params: ClassVar = dict(SECOND_ORDER_PARAMS)
    state_type = ACOGDiagState
    params_type = ACOGParams
    kernels = (linear_score, acog_diag_update)

    def kernel_params(self) -> ACOGParams:
        return second_order_params(self.params)

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim), "sigma_diag": np.ones(self.dim)}
