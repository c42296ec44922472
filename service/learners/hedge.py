"""Exponential weights over the members (``selection="hedge"``): a weighted vote that can switch.

The leader rule follows one member by its objective since the start, so a member that is better
only later (a forest after its first hundreds of labels) takes long to lead. Fixed-Share
(Herbster & Warmuth 1998) keeps a weight per member instead::

    vote_t   = sum_k w_k p_k(x_t)                         (p_k = +-1, the member's prediction)
    predict  = +1 if vote_t >= 0 else -1
    l_k      = c(y_t) [p_k != y_t]                         (class-balanced cost of a mistake)
    w_k     <- w_k exp(-eta l_k) / Z;   w_k <- (1 - alpha) w_k + alpha pi_k

with ``c(y) = 1 - p_y`` for ``sum`` (``p_y``: the Laplace share of class ``y`` in the labels before
this one, so a mistake on the rare class costs more, as the balanced objective does) and
``c(+1) = c_p``, ``c(-1) = c_n`` for ``cost``. ``pi`` is the prior: the initial weights and the
share vector (Fixed-Share with a non-uniform share vector; with ``pi_k = 1/K`` it is the classic
rule). The share ``alpha`` lets a member that was bad early come back within
``~ log(1 / (alpha pi_k)) / eta`` labels. The weights are float64 in the state (stored as
logarithms, renormalised every label); :func:`hedge_steps` is the one kernel for a single label and
for a stream, so both give the same bits.

:func:`group_prior` builds ``pi`` from the roster: every group of members (a family over one input
form: linear ACOG over L2, the forest over standardised input, ...) gets the same mass, split
evenly inside, so that the ten linear members of a form do not outvote a single forest or
nearest-neighbour member by ten to one before any label. ``ETA = 0.1``, ``ALPHA = 1e-3`` and this
prior were chosen together on the tuning set (``python -m bench.quality.combiners``, against rates
0.03 to 3, shares 1e-4 to 0.03, a uniform and a per-family prior, AdaNormalHedge and stacking).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..jit_cache import kernel

ETA = 0.1
ALPHA = 1e-3


def group_prior(groups: Sequence[object]) -> np.ndarray:
    """``pi_k = 1 / (G |g(k)|)``: ``G`` groups of equal mass (``groups[k]``, member ``k``'s group), each
    split evenly among its members; deterministic, sums to 1 (to rounding)."""
    keys = list(groups)
    sizes = {g: keys.count(g) for g in keys}
    return np.array([1.0 / (len(sizes) * sizes[g]) for g in keys], dtype=np.float64)


@kernel
def hedge_vote(log_w: np.ndarray, predictions: np.ndarray) -> float:
    """``sum_k w_k p_k`` with ``w = softmax(log_w)``, in member order."""
    top = log_w.max()
    total = 0.0
    vote = 0.0
    for k in range(log_w.shape[0]):
        w = math.exp(log_w[k] - top)
        total += w
        vote += w * predictions[k]
    return vote / total


@kernel
def hedge_steps(
    log_w: np.ndarray, counts: np.ndarray, P: np.ndarray, ys: np.ndarray, cost: bool, c_p: float,
    eta: float, alpha: float, prior: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The votes before each label of the members' predictions ``P`` (``n x K``, +-1) and labels
    ``ys``; ``log_w`` and ``counts`` (``[t_p, t_n]`` before the stream) learn each label in place,
    sharing ``alpha`` of the mass toward ``prior``."""
    n, k = P.shape
    votes = np.empty(n)
    for i in range(n):
        votes[i] = hedge_vote(log_w, P[i])
        y = ys[i]
        if cost:
            c = c_p if y == 1 else 1.0 - c_p
        else:
            seen = counts[0] + counts[1]
            share = ((counts[0] if y == 1 else counts[1]) + 1.0) / (seen + 2.0)
            c = 1.0 - share
        for j in range(k):
            if P[i, j] != y:
                log_w[j] -= eta * c
        top = log_w.max()
        total = 0.0
        for j in range(k):
            total += math.exp(log_w[j] - top)
        for j in range(k):
            log_w[j] = math.log((1.0 - alpha) * math.exp(log_w[j] - top) / total + alpha * prior[j])
        counts[0 if y == 1 else 1] += 1
    return votes
