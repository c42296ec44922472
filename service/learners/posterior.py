"""Kernels shared by the learners that estimate ``P(+|x)`` (the forest, the nearest neighbours):
the input densified, and the cost-optimal decision on the estimate.

With ``p``, ``q`` the estimates of ``P(+|x)`` and ``P(-|x)`` and ``rho`` the model's bias (fixed,
``c_p / c_n`` for the objective ``cost``, or the Laplace estimate
``alpha_p (t_n + 1) / (alpha_n (t_p + 1))`` from the labels so far for ``sum``), the score is
``log(p / q) + log(rho)``: non-negative exactly when ``p >= 1 / (1 + rho)``, the cost-optimal
threshold (``c_n / (c_p + c_n)`` for ``cost``; the running prior of positives
``alpha_n (t_p + 1) / (alpha_n (t_p + 1) + alpha_p (t_n + 1))`` for the Laplace rho). The loss the
update reports is the log-loss of that posterior on the label, ``log(1 + exp(-y (score - log rho)))``.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit_cache import kernel


@kernel
def dense(idx: np.ndarray, val: np.ndarray, dim: int) -> np.ndarray:
    """The canonical sparse ``x`` as a dense vector of length ``dim``."""
    x = np.zeros(dim)
    for k in range(idx.shape[0]):
        x[idx[k]] = val[k]
    return x


@kernel
def bias(counts: np.ndarray, rho_mode: float, rho_fixed: float, alpha_p: float) -> float:
    """``rho`` for the next label from a learner's ``hyper`` entries (``rho_mode`` 1: Laplace):
    the driver's rule (:func:`service.learners.driver.current_rho`), for a score kernel, which is
    not handed ``rho``."""
    if rho_mode == 1.0:
        return alpha_p * (counts[1] + 1.0) / ((1.0 - alpha_p) * (counts[0] + 1.0))
    return rho_fixed


@kernel
def decision_score(p: float, q: float, rho: float) -> float:
    """``log(p / q) + log(rho)``: its sign is the cost-optimal decision ``p >= 1 / (1 + rho)``."""
    return math.log(p) - math.log(q) + math.log(rho)


@kernel
def decision_loss(y: int, score: float, rho: float) -> float:
    """The log-loss on ``y`` of the posterior a :func:`decision_score` carries,
    ``log(1 + exp(-y (score - log rho)))``, without overflow."""
    m = -y * (score - math.log(rho))
    return m + math.log1p(math.exp(-m)) if m > 0.0 else math.log1p(math.exp(m))
