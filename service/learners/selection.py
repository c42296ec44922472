"""How an ensemble picks the member that predicts: running objectives from the members' own online
mistakes, all-time (``"leader"``) or over the last ``window`` labels (``"window"``).

Each member's *own* online predictions (made before it learns each label) give it running counts
``T_p, T_n, M_p, M_n`` and so a running value of the model's objective:

- ``sum``: ``alpha_p * sens + alpha_n * spec`` (higher is better; a class not seen yet
  contributes its share as if perfect, so an early stream does not favour a member by
  accident of NaN);
- ``cost``: ``c_p * M_p + c_n * M_n`` (lower is better).

The leader is the member with the best objective. Ties go to the earlier member; objectives within
a relative ``1e-12`` of the best count as tied, so that floating-point rounding cannot break a tie
that is exact in the counts (with ``c_p = 0.9``, nine false alarms cost exactly one missed anomaly,
but ``9 * (1 - 0.9)`` is not ``0.9`` in floating point). The choice is a function of the counts
alone (int64 arrays), so it is deterministic and survives a checkpoint exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ..jit_cache import kernel
from .errors import InvalidParameter

Objective = Literal["sum", "cost"]
Selection = Literal["leader", "window", "hedge"]
TIE_TOLERANCE = 1e-12


def objective_values(counts: np.ndarray, objective: Objective, alpha_p: float, c_p: float) -> np.ndarray:
    """Per-member objective, higher is better. ``counts`` is ``(..., K, 4)`` of ``t_p, t_n, m_p, m_n``."""
    t_p, t_n, m_p, m_n = (counts[..., i].astype(np.float64) for i in range(4))
    if objective == "cost":
        return -(c_p * m_p + (1.0 - c_p) * m_n)
    with np.errstate(invalid="ignore", divide="ignore"):
        sens = np.where(t_p > 0, (t_p - m_p) / t_p, 1.0)
        spec = np.where(t_n > 0, (t_n - m_n) / t_n, 1.0)
    return alpha_p * sens + (1.0 - alpha_p) * spec


def best_member(values: np.ndarray) -> Any:
    """Index (along the last axis) of the best objective; near-ties go to the earliest member."""
    top = values.max(axis=-1, keepdims=True)
    return np.argmax(values >= top - TIE_TOLERANCE * np.maximum(1.0, np.abs(top)), axis=-1)


def steps_of(labels: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """``(n, K, 4)`` int8 increments of ``t_p, t_n, m_p, m_n`` from labels ``(n,)`` and the members'
    predictions ``(n, K)``."""
    pos = (labels == 1)[:, None]
    wrong = predictions != labels[:, None]
    pos, neg = np.broadcast_to(pos, wrong.shape), np.broadcast_to(~pos, wrong.shape)
    return np.stack([pos, neg, pos & wrong, neg & wrong], axis=-1).astype(np.int8)


@kernel
def record_label(
    counts: np.ndarray,
    window_counts: np.ndarray,
    recent: np.ndarray,
    cursor: np.ndarray,
    predictions: np.ndarray,
    label: int,
) -> None:
    """One label into the counts (in :func:`~service.learners.hedge.label_round`): the step of
    member ``k`` is ``(y = +1, y = -1, y = +1 and p_k != y, y = -1 and p_k != y)``
    (``steps_of([label], predictions[None])[0]``); it is added to the all-time counts, replaces the
    oldest slot of the window ring in the window counts and the ring, and the cursor moves on."""
    slot = cursor[0]
    pos = 1 if label == 1 else 0
    for k in range(predictions.shape[0]):
        wrong = 1 if predictions[k] != label else 0
        step = (pos, 1 - pos, pos * wrong, (1 - pos) * wrong)
        for j in range(4):
            counts[k, j] += step[j]
            window_counts[k, j] += step[j] - recent[slot, k, j]
            recent[slot, k, j] = step[j]
    cursor[0] = (slot + 1) % recent.shape[0]
    cursor[1] += 1


class Tally:
    """The members' counts, all-time and over a ring of the last ``window`` labels."""

    def __init__(self, n_members: int, window: int) -> None:
        self.window = window
        self.counts = np.zeros((n_members, 4), dtype=np.int64)  # all-time, per member
        self.window_counts = np.zeros((n_members, 4), dtype=np.int64)  # over the last `window` labels
        self.recent = np.zeros((window, n_members, 4), dtype=np.int8)  # ring of per-label increments
        self.cursor = np.zeros(2, dtype=np.int64)  # [next slot, labels seen]

    def before_each(self, steps: np.ndarray, selection: Selection) -> np.ndarray:
        """The counts the selection reads before each of ``steps`` (``(n, K, 4)``), not recorded."""
        n, k = steps.shape[0], steps.shape[1]
        if selection == "leader":
            return np.asarray(self.counts + np.cumsum(steps, axis=0, dtype=np.int64) - steps)
        slot = int(self.cursor[0])  # the ring's content, oldest first, then the stream
        history = np.concatenate([np.roll(self.recent, -slot, axis=0), steps]).astype(np.int64)
        totals = np.concatenate([np.zeros((1, k, 4), np.int64), np.cumsum(history, axis=0)])
        return np.asarray(totals[self.window : self.window + n] - totals[:n])

    def record_many(self, steps: np.ndarray) -> None:
        """What :meth:`record_label` does for each row of ``steps``, in one go (same resulting state)."""
        n = steps.shape[0]
        start = int(self.cursor[0])
        self.counts += steps.sum(axis=0, dtype=np.int64)
        tail = steps[max(0, n - self.window) :]
        slots = (start + np.arange(n - tail.shape[0], n)) % self.window
        self.recent[slots] = tail
        self.window_counts = self.recent.sum(axis=0, dtype=np.int64)
        self.cursor[0] = (start + n) % self.window
        self.cursor[1] += n

    def arrays(self) -> dict[str, np.ndarray]:
        """The state (``window_counts`` is derived from ``recent``)."""
        return {"member_counts": self.counts, "recent": self.recent, "cursor": self.cursor}

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        self.counts, self.recent, self.cursor = arrays["member_counts"], arrays["recent"], arrays["cursor"]
        self.window_counts = self.recent.sum(axis=0, dtype=np.int64)

    def copy(self) -> Tally:
        new = Tally(self.counts.shape[0], self.window)
        new.load({k: v.copy() for k, v in self.arrays().items()})
        return new


def check_options(grid: Sequence[float], objective: Any, selection: Any, c_p: float, window: Any) -> None:
    """The ensemble's options (``eta_grid``, ``objective``, ``selection``, ``c_p``, ``window``), or
    :class:`~service.learners.errors.InvalidParameter` naming the first that is wrong."""
    values = [float(v) for v in grid]
    if not values or any(not (math.isfinite(v) and v > 0) for v in values) or len(set(values)) != len(values):
        raise InvalidParameter("eta_grid", f"must be distinct finite numbers > 0, got {list(grid)!r}")
    if objective not in ("sum", "cost"):
        raise InvalidParameter("objective", f'must be "sum" or "cost", got {objective!r}')
    if selection not in ("leader", "window", "hedge"):
        raise InvalidParameter("selection", f'must be "leader", "window" or "hedge", got {selection!r}')
    if not 0.0 < c_p < 1.0:
        raise InvalidParameter("c_p", f"must lie in (0, 1), got {c_p!r}")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise InvalidParameter("window", f"must be an integer >= 1, got {window!r}")
