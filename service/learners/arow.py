"""AROW: adaptive regularisation of weight vectors (Crammer, Kulesza, Dredze 2009).

State ``mu`` (init 0) and ``Sigma`` (init I). When ``l = max(0, 1 - y mu.x) > 0``::

    v = x^T Sigma x,   beta = 1 / (v + r),   alpha = l beta
    mu    <- mu + alpha y Sigma x            (the OLD Sigma, unlike ACOG)
    Sigma <- Sigma - beta (Sigma x)(Sigma x)^T

Cost-insensitive; the ACOG paper runs it as a baseline with ``r`` from the same grid.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..jit_cache import kernel
from .base import Learner, positive
from .covariance import (
    DEFAULT_MEMORY_BUDGET,
    check_sigma_fits,
    identity,
    memory_budget,
    sigma_x_and_quadratic,
    subtract_outer,
)
from .first_order import linear_score

AROWState = namedtuple("AROWState", ["counts", "w", "sigma"])


class AROWParams(NamedTuple):
    r: float  # the regulariser


@kernel
def arow_update(st: Any, p: AROWParams, idx: np.ndarray, val: np.ndarray, y: int,
                score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    loss = max(0.0, 1.0 - y * score)
    if loss <= 0.0:
        return loss, False
    mu, sigma = st.w, st.sigma
    u, v = sigma_x_and_quadratic(sigma, idx, val)  # Sigma_old x, x^T Sigma_old x
    beta = 1.0 / (v + p.r)
    alpha = loss * beta
    for i in range(mu.shape[0]):
        mu[i] += alpha * y * u[i]
    subtract_outer(sigma, u, beta)
    return loss, True


class AROW(Learner):
    """AROW with a full covariance (O(d^2)); ``r`` is the regulariser."""

    algorithm = "arow"
    cost_sensitive = False
    own_params: ClassVar = {
        "r": (1.0, positive("r")),
        "memory_budget": (DEFAULT_MEMORY_BUDGET, memory_budget),
    }
    state_type = AROWState
    params_type = AROWParams
    kernels = (linear_score, arow_update)

    def _check_params(self) -> None:
        check_sigma_fits(self.algorithm, self.dim, self.params["memory_budget"])

    def kernel_params(self) -> AROWParams:
        return AROWParams(r=float(self.params["r"]))

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim), "sigma": identity(self.dim)}
