"""The selection rules of an eta grid, replayed offline from its members' online predictions."""

from __future__ import annotations

import math

import numpy as np

from bench.quality.protocol import ALPHA_P, C_P
from service.learners.selection import best_member, objective_values


def member_steps(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(n, K, 4)`` per-row increments of ``t_p, t_n, m_p, m_n`` for every member."""
    pos = (y == 1)[:, None]
    wrong = y[:, None] != P
    shape = P.shape
    return np.stack(
        [np.broadcast_to(pos, shape), np.broadcast_to(~pos, shape), pos & wrong, ~pos & wrong], axis=2
    ).astype(np.float64)


def _objective(before: np.ndarray, metric: str) -> np.ndarray:
    return objective_values(before, metric, ALPHA_P, C_P)  # type: ignore[arg-type]


def select(P: np.ndarray, y: np.ndarray, metric: str, rule: str, param: float = 0.0) -> np.ndarray:
    """The ensemble's online predictions under a selection ``rule`` over the members ``P``.

    - ``leader``: the member with the best objective over all labels so far (EtaGrid).
    - ``window``: the same over the last ``param`` labels (EtaGrid ``selection="window"``).
    - ``discount``: the same over exponentially discounted counts, half-life ``param`` labels.
    - ``hedge``: a vote of all members weighted by ``exp(-beta_t L_k)``, ``L_k`` the member's
      cumulative loss (cost count, or ``t (1 - sum)``), ``beta_t = param sqrt(ln K / t)``.
    """
    n, k = P.shape
    steps = member_steps(P, y)
    total = np.cumsum(steps, axis=0)
    before = total - steps
    if rule == "window":
        before = before - _lag(total, int(param) + 1)
    elif rule == "discount":
        from scipy.signal import lfilter

        lam = 0.5 ** (1.0 / param)
        filtered = lfilter([1.0], [1.0, -lam], steps, axis=0)
        before = np.concatenate([np.zeros((1, k, 4)), filtered[:-1]])
    values = _objective(before, metric)
    if rule != "hedge":
        chosen = best_member(values)
        return P[np.arange(n), chosen]
    t = np.arange(n, dtype=np.float64)
    losses = -values if metric == "cost" else t[:, None] * (1.0 - values)
    losses = losses - losses.min(axis=1, keepdims=True)
    beta = param * np.sqrt(math.log(max(k, 2)) / np.maximum(t, 1.0))
    weights = np.exp(-beta[:, None] * losses)
    vote = (weights * P).sum(axis=1)
    return np.where(vote >= 0.0, 1, -1).astype(np.int8)


def _lag(total: np.ndarray, w: int) -> np.ndarray:
    """``total[i - w]`` for every row i (zeros before the start): counts that left the window."""
    n = total.shape[0]
    out = np.zeros_like(total)
    if w < n:
        out[w:] = total[: n - w]
    return out
