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
and :func:`standard_kernel_vector` (one example as a member reads it) share :func:`standardise_row`,
so that a single example and a whole stream give the same bits.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit_cache import kernel
from ..normalization import nonzero_entries

WARM_UP = 10
"""Examples before the running standard deviation divides (before that: centring only)."""
CLIP = 8.0
"""Largest absolute standardised value."""


@kernel
def standardise_row(
    row: np.ndarray, count: np.ndarray, mean: np.ndarray, m2: np.ndarray, learn: bool, out: np.ndarray
) -> None:
    """``out``: the dense ``row`` (``d``) standardised by the statistics before it; with ``learn`` the
    row is then learned into ``count``/``mean``/``m2`` (in place). The one routine behind
    :func:`standardise_rows` and :func:`standard_kernel_vector`, so that both give the same bits."""
    d = row.shape[0]
    n = count[0]
    for j in range(d):
        z = 0.0
        if n >= WARM_UP and m2[j] > 0.0:
            z = (row[j] - mean[j]) / math.sqrt(m2[j] / n)
        out[j] = min(CLIP, max(-CLIP, z))
    if learn:
        n += 1
        count[0] = n
        for j in range(d):
            delta = row[j] - mean[j]
            mean[j] += delta / n
            m2[j] += delta * (row[j] - mean[j])


@kernel
def standardise_rows(
    dense: np.ndarray, count: np.ndarray, mean: np.ndarray, m2: np.ndarray, learn: bool
) -> np.ndarray:
    """The rows of ``dense`` (``n x d``) standardised in order, each by the statistics before it;
    with ``learn`` each row is then learned into ``count``/``mean``/``m2`` (in place)."""
    out = np.empty(dense.shape)
    for i in range(dense.shape[0]):
        standardise_row(dense[i], count, mean, m2, learn, out[i])
    return out


@kernel
def standard_kernel_vector(
    idx: np.ndarray, val: np.ndarray, count: np.ndarray, mean: np.ndarray, m2: np.ndarray, learn: bool,
    tail: int, tail_value: float,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """A canonical vector's standardised form as a member's kernel reads it, in one call: the dense
    row of ``(idx, val)`` standardised (:func:`standardise_row`, learning it with ``learn``), its
    non-zero entries in index order, then the entry ``(tail, tail_value)`` (the intercept) unless
    ``tail < 0``. The same bits as densifying, :func:`standardise_rows`, keeping the non-zero entries
    and the member's ``kernel_vector`` one after the other."""
    d = mean.shape[0]
    row = np.zeros(d)
    for k in range(idx.shape[0]):
        row[idx[k]] = val[k]
    z = np.empty(d)
    standardise_row(row, count, mean, m2, learn, z)
    return nonzero_entries(np.arange(d), z, tail, tail_value)


def fresh_statistics(n_features: int) -> dict[str, np.ndarray]:
    """The state before any example: ``n = 0``, zero means and sums of squares."""
    return {
        "std_count": np.zeros(1, dtype=np.int64),
        "std_mean": np.zeros(n_features, dtype=np.float64),
        "std_m2": np.zeros(n_features, dtype=np.float64),
    }
