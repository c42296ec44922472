"""Online per-feature standardisation: the input a member reads when the norm carries the class.

Per-example L2 normalisation (``x / ||x||``) keeps the direction of ``x`` and erases its length, so a
stream whose classes differ in spread rather than in direction looks the same to every member that
reads it. The alternative input standardises each feature by the running statistics of the examples
*before* the current one (Welford's algorithm, float64, in feature order)::

    z_j = clip((x_j - mean_j) / s_j, -CLIP, CLIP)   with s_j = sqrt(M2_j / n),
          when n >= WARM_UP and M2_j > 0;   z_j = 0 otherwise

and then learns ``x`` into them: ``n <- n + 1; delta = x - mean; mean <- mean + delta / n;
M2 <- M2 + delta (x - mean)``. A zero (absent) feature counts as the value 0.

**Warm-up.** For the first ``WARM_UP`` (= 10) examples every feature reads 0, its mean: a variance
from fewer examples is too noisy to divide by, and without one the deviation ``x_j - mean_j`` is in
the feature's own units (an income's tens of thousands), which no standardised coordinate can mean.
A feature with no spread so far (a constant, or absent until now) reads 0 as well, as river's
``StandardScaler`` reads it. Centring alone was the earlier rule: it put the first examples of a
feature of large scale at the clip, and a Mondrian tree, which splits a node only for a point outside
its box, kept the boxes those points had stretched and stopped splitting (the forest over the
standardised input then flagged every example, or none, on a river ``Agrawal`` stream). The clip
bounds what a member sees while the statistics settle (and on heavy tails) at ``CLIP`` (= 8)
standard deviations.

**What updates the statistics.** Every labelled example, in label-log order, when the model learns
it; never a prediction. Predictions are not replicated, labels are: so the statistics are a
function of the label log alone and every replica, recovery and checkpoint holds the same bits.
A prediction reads the statistics of the model version that scores it.

The state is ``count`` (int64, ``[n]``), ``mean`` and ``m2`` (float64, ``d``). :func:`standardise_rows`
is the one kernel for a single example and a whole stream, so that both give the same bits.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit_cache import kernel

WARM_UP = 10
"""Examples before the running standard deviation divides (before that: centring only)."""
CLIP = 8.0
"""Largest absolute standardised value."""


@kernel
def standardise_rows(
    dense: np.ndarray, count: np.ndarray, mean: np.ndarray, m2: np.ndarray, learn: bool
) -> np.ndarray:
    """The rows of ``dense`` (``n x d``) standardised in order, each by the statistics before it;
    with ``learn`` each row is then learned into ``count``/``mean``/``m2`` (in place)."""
    n_rows, d = dense.shape
    out = np.empty((n_rows, d))
    for i in range(n_rows):
        n = count[0]
        for j in range(d):
            z = 0.0
            if n >= WARM_UP and m2[j] > 0.0:
                z = (dense[i, j] - mean[j]) / math.sqrt(m2[j] / n)
            out[i, j] = min(CLIP, max(-CLIP, z))
        if learn:
            n += 1
            count[0] = n
            for j in range(d):
                delta = dense[i, j] - mean[j]
                mean[j] += delta / n
                m2[j] += delta * (dense[i, j] - mean[j])
    return out


def fresh_statistics(n_features: int) -> dict[str, np.ndarray]:
    """The state before any example: ``n = 0``, zero means and sums of squares."""
    return {
        "std_count": np.zeros(1, dtype=np.int64),
        "std_mean": np.zeros(n_features, dtype=np.float64),
        "std_m2": np.zeros(n_features, dtype=np.float64),
    }
