"""AROW: adaptive regularisation of weight vectors (Crammer, Kulesza, Dredze 2009).

State ``mu`` (init 0) and ``Sigma`` (init I). When ``l = max(0, 1 - y mu.x) > 0``::

    v = x^T Sigma x,   beta = 1 / (v + r),   alpha = l beta
    mu    <- mu + alpha y Sigma x            (the OLD Sigma, unlike ACOG)
    Sigma <- Sigma - beta (Sigma x)(Sigma x)^T

Cost-insensitive; the ACOG paper runs it as a baseline with ``r`` from the same grid.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, ClassVar

import numpy as np

from . import driver
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
from .jit import kernel

AROWState = namedtuple("AROWState", ["counts", "w", "sigma"])


@kernel
def arow_update(st: Any, hp: np.ndarray, idx: np.ndarray, val: np.ndarray, y: int,
                score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    loss = max(0.0, 1.0 - y * score)
    if loss <= 0.0:
        return loss, False
    mu, sigma = st.w, st.sigma
    u, v = sigma_x_and_quadratic(sigma, idx, val)  # Sigma_old x, x^T Sigma_old x
    beta = 1.0 / (v + hp[0])
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

    def _check_params(self) -> None:
        check_sigma_fits(self.algorithm, self.dim, self.params["memory_budget"])

    def _hyper(self) -> list[float]:
        return [self.params["r"]]

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim), "sigma": identity(self.dim)}


driver.register(AROWState, linear_score, arow_update)
