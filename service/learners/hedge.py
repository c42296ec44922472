"""Exponential weights over the members (``selection="hedge"``): a weighted vote that can switch.

The leader rule follows one member by its objective since the start, so a member that is better
only later (a forest after its first hundreds of labels) takes long to lead. Fixed-Share
(Herbster & Warmuth 1998) keeps a weight per member instead, and the vote weighs the members'
scores clipped to ``[-1, 1]`` (their *margins*), not only their signs::

    vote_t   = sum_k w_k m_k(x_t),   m_k = clip(s_k(x_t), -1, 1)   (s_k: member k's score)
    predict  = +1 if vote_t >= theta_t else -1
    l_k      = c(y_t) [p_k != y_t]                       (p_k = sign(s_k): a mistake's class cost)
    w_k     <- w_k exp(-eta l_k) / Z;   w_k <- (1 - alpha) w_k + alpha pi_k

with ``c(y) = 1 - p_y`` for ``sum`` (``p_y``: the Laplace share of class ``y`` in the labels before
this one, so a mistake on the rare class costs more, as the balanced objective does) and
``c(+1) = c_p``, ``c(-1) = c_n`` for ``cost``. ``pi`` is the prior: the initial weights and the
share vector (Fixed-Share with a non-uniform share vector; with ``pi_k = 1/K`` it is the classic
rule). The share ``alpha`` lets a member that was bad early come back within
``~ log(1 / (alpha pi_k)) / eta`` labels.

The decision threshold ``theta_t`` is chosen online too, by the leader rule over
:data:`THRESHOLDS`: each threshold keeps the counts of the mistakes ``vote >= theta`` would have
made on every label so far (``m_p``, ``m_n``; the class counts ``t_p``, ``t_n`` are shared), and
``theta_t`` is the one with the best objective (:func:`~service.learners.selection.objective_values`,
near-ties to the earlier, so 0 until another threshold is ahead). The score is ``vote_t - theta_t``:
its sign is the prediction.

The weights are float64 in the state (stored as logarithms, renormalised every label), the
thresholds' counts int64; :func:`hedge_steps` is the one kernel for a single label and for a
stream, so both give the same bits.

:func:`group_prior` builds ``pi`` from the roster: every group of members (a family over one input
form: linear ACOG over L2, the forest over standardised input, ...) gets the same mass, split
evenly inside, so that the ten linear members of a form do not outvote a single forest or
nearest-neighbour member by ten to one before any label. ``ETA = 0.1``, ``ALPHA = 1e-3``, this
prior, the margins and the thresholds were chosen on the tuning set (``python -m
bench.quality.combiners``, against rates 0.03 to 3, shares 1e-4 to 0.03, a uniform and a per-family
prior, a vote of signs, AdaNormalHedge and stacking; ``python -m bench.quality.imbalance`` for the
same study on imbalanced variants).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..jit_cache import kernel
from .errors import InvalidInput
from .selection import TIE_TOLERANCE, Tally, record_label

ETA = 0.1
ALPHA = 1e-3
THRESHOLDS = np.array([0.0, -0.4, -0.2, -0.1, 0.1, 0.2, 0.4])
"""The decision thresholds on the vote the leader rule chooses from (0 first: near-ties go to it)."""


def group_prior(groups: Sequence[object]) -> np.ndarray:
    """``pi_k = 1 / (G |g(k)|)``: ``G`` groups of equal mass (``groups[k]``, member ``k``'s group), each
    split evenly among its members; deterministic, sums to 1 (to rounding)."""
    keys = list(groups)
    sizes = {g: keys.count(g) for g in keys}
    return np.array([1.0 / (len(sizes) * sizes[g]) for g in keys], dtype=np.float64)


@kernel
def hedge_vote(log_w: np.ndarray, scores: np.ndarray) -> float:
    """``sum_k w_k clip(s_k, -1, 1)`` with ``w = softmax(log_w)``, in member order."""
    top = log_w.max()
    total = 0.0
    vote = 0.0
    for k in range(log_w.shape[0]):
        w = math.exp(log_w[k] - top)
        total += w
        vote += w * min(1.0, max(-1.0, scores[k]))
    return vote / total


@kernel
def chosen_threshold(
    counts: np.ndarray, mistakes: np.ndarray, cost: bool, alpha_p: float, c_p: float
) -> int:  # fmt: skip
    """The index in :data:`THRESHOLDS` with the best objective: class counts ``[t_p, t_n]``,
    ``mistakes[q] = [m_p, m_n]`` of threshold ``q``; the values of
    :func:`~service.learners.selection.objective_values` and the near-tie rule of ``best_member``."""
    values = np.empty(mistakes.shape[0])
    t_p, t_n = float(counts[0]), float(counts[1])
    for q in range(mistakes.shape[0]):
        m_p, m_n = float(mistakes[q, 0]), float(mistakes[q, 1])
        if cost:
            values[q] = -(c_p * m_p + (1.0 - c_p) * m_n)
        else:
            sens = (t_p - m_p) / t_p if t_p > 0 else 1.0
            spec = (t_n - m_n) / t_n if t_n > 0 else 1.0
            values[q] = alpha_p * sens + (1.0 - alpha_p) * spec
    top = values.max()
    floor = top - TIE_TOLERANCE * max(1.0, abs(top))
    for q in range(values.shape[0]):
        if values[q] >= floor:
            return q
    return 0


@kernel
def hedge_steps(
    log_w: np.ndarray, counts: np.ndarray, mistakes: np.ndarray, P: np.ndarray, S: np.ndarray,
    ys: np.ndarray, cost: bool, alpha_p: float, c_p: float, eta: float, alpha: float, prior: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The scores ``vote - theta`` before each label of the members' predictions ``P`` (``n x K``,
    +-1) and scores ``S`` (``n x K``), labels ``ys``; ``log_w``, the class counts ``counts``
    (``[t_p, t_n]`` before the stream) and the thresholds' ``mistakes`` learn each label in place,
    the weights sharing ``alpha`` of the mass toward ``prior``."""
    n, k = P.shape
    scores = np.empty(n)
    for i in range(n):
        vote = hedge_vote(log_w, S[i])
        theta = THRESHOLDS[chosen_threshold(counts, mistakes, cost, alpha_p, c_p)]
        scores[i] = vote - theta
        y = ys[i]
        for q in range(THRESHOLDS.shape[0]):
            if (1 if vote >= THRESHOLDS[q] else -1) != y:
                mistakes[q, 0 if y == 1 else 1] += 1
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
    return scores


@kernel
def label_round(
    scores: np.ndarray, label: int, hedge: bool, log_w: np.ndarray, mistakes: np.ndarray, cost: bool,
    alpha_p: float, c_p: float, prior: np.ndarray, counts: np.ndarray, window_counts: np.ndarray,
    recent: np.ndarray, cursor: np.ndarray,
) -> tuple[float, int, float]:  # fmt: skip
    """One label after the members' round, in one compiled call: their predictions ``sign(s_k)``
    (``+1`` at 0); with ``hedge``, :func:`hedge_steps` on that one label (the class counts those
    of the tally, ``counts[0, :2]``, before it); then the tally records the label
    (:func:`~service.learners.selection.record_label`). Returns the vote's score before the label,
    and after it the heaviest member (``argmax(log_w)``, the first of ties, as numpy's) and the
    threshold :meth:`VoteState.threshold` would choose; NaN, -1 and NaN without ``hedge``."""
    k = scores.shape[0]
    predictions = np.empty((1, k), np.int8)
    for j in range(k):
        predictions[0, j] = 1 if scores[j] >= 0.0 else -1
    score = np.nan
    if hedge:
        labels = np.full(1, label, np.int64)
        S = scores.reshape(1, k)
        class_counts = counts[0, :2].copy()
        score = hedge_steps(
            log_w, class_counts, mistakes, predictions, S, labels, cost, alpha_p, c_p, ETA, ALPHA, prior
        )[0]
    record_label(counts, window_counts, recent, cursor, predictions[0], label)
    if not hedge:
        return score, -1, np.nan
    theta = THRESHOLDS[chosen_threshold(counts[0, :2], mistakes, cost, alpha_p, c_p)]
    return score, int(np.argmax(log_w)), theta


class VoteState:
    """The vote's state: the prior (rebuilt from the roster, never stored), the log-weights and the
    thresholds' mistakes (both in the model's state)."""

    def __init__(self, prior: np.ndarray) -> None:
        self.prior = prior
        self.log_w = np.log(prior)
        self.mistakes = np.zeros((THRESHOLDS.shape[0], 2), dtype=np.int64)
        self._theta: float | None = None  # cache of threshold(); None once a label is learned

    def weights(self) -> np.ndarray:
        """``softmax(log_w)``: the members' weights, summing to 1."""
        w = np.exp(self.log_w - self.log_w.max())
        return np.asarray(w / w.sum())

    def threshold(self, counts: np.ndarray, cost: bool, alpha_p: float, c_p: float) -> float:
        """``theta_t`` after the labels :meth:`steps` has learned (``counts[0, :2]`` = ``[t_p, t_n]``:
        the members' tally); recomputed only after it learns more."""
        if self._theta is None:
            q = chosen_threshold(counts[0, :2], self.mistakes, cost, alpha_p, c_p)
            self._theta = float(THRESHOLDS[q])
        return self._theta

    def steps(
        self, P: np.ndarray, S: np.ndarray, labels: np.ndarray, counts: np.ndarray, cost: bool,
        alpha_p: float, c_p: float,
    ) -> np.ndarray:  # fmt: skip
        """:func:`hedge_steps` on this state (``counts`` is not changed)."""
        self._theta = None
        args = (self.log_w, counts.copy(), self.mistakes, P, S, np.asarray(labels, dtype=np.int64))
        return np.asarray(hedge_steps(*args, cost, alpha_p, c_p, ETA, ALPHA, self.prior))

    def learn_label(
        self, scores: np.ndarray, label: int, tally: Tally, hedge: bool, cost: bool, alpha_p: float,
        c_p: float,
    ) -> tuple[float, int]:  # fmt: skip
        """:func:`label_round`: with ``hedge`` the weights and thresholds learn the label (the score
        before it and the heaviest member after it are returned, and the threshold after it kept for
        :meth:`threshold`, of the same ``cost``, ``alpha_p`` and ``c_p``); ``tally`` records it
        either way."""
        score, heaviest, theta = label_round(
            scores, label, hedge, self.log_w, self.mistakes, cost, alpha_p, c_p, self.prior,
            tally.counts, tally.window_counts, tally.recent, tally.cursor,
        )  # fmt: skip
        if hedge:
            self._theta = theta
        return score, heaviest

    def arrays(self, share: Callable[[np.ndarray], np.ndarray] = np.asarray) -> dict[str, np.ndarray]:
        return {"hedge_log_w": share(self.log_w), "hedge_threshold_mistakes": share(self.mistakes)}

    def checked(self, state: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Copies of this state's arrays from a model's ``state``, checked; a state written before the
        vote had thresholds has no mistakes' counts, and its thresholds start from none (its weights
        are the same: the thresholds never change them)."""
        out = {}
        for key, current in self.arrays().items():
            default = None if key == "hedge_log_w" else np.zeros_like(current)
            arr = np.asarray(state.get(key, default))
            if arr.dtype != current.dtype or arr.shape != current.shape:
                raise InvalidInput(
                    "state", f"{key!r} has {arr.dtype}{arr.shape}, expected {current.dtype}{current.shape}"
                )
            out[key] = np.array(arr, copy=True, order="C")
        return out

    def load(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Take the arrays :meth:`checked` returned."""
        self.log_w, self.mistakes = arrays["hedge_log_w"], arrays["hedge_threshold_mistakes"]
        self._theta = None

    def copy(self) -> VoteState:
        new = VoteState(self.prior)
        new.load({k: v.copy() for k, v in self.arrays().items()})
        return new
