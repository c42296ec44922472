"""Running cost-sensitive measures of an online classifier.

Counted over labelled rounds with the prediction made when the example was scored (the
online mistake), never a re-prediction at label time. +1 is the positive (anomaly) class.

- ``T_p``, ``T_n``: labelled positives / negatives; ``M_p``, ``M_n``: mistakes on them.
- sensitivity ``= (T_p - M_p) / T_p``; specificity ``= (T_n - M_n) / T_n`` (NaN while the
  class has no label yet);
- **sum** ``= alpha_p * sensitivity + alpha_n * specificity`` with ``alpha_n = 1 - alpha_p``;
- **cost** ``= c_p * M_p + c_n * M_n`` with ``c_n = 1 - c_p``;
- accuracy ``= (T - M) / T``;
- the Laplace estimate of the sum-optimal bias, ``alpha_p (T_n + 1) / (alpha_n (T_p + 1))``.

Every value is computed from the integer counts, so two runs that saw the same labels
report bit-identical measures. :class:`WindowedMeasures` gives the same over the last N
labels, for dashboards that must show drift and not only the all-time average.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np


def _ratio(num: int, den: int) -> float:
    return num / den if den else math.nan


def complement(p: float) -> float:
    """``1 - p`` for the decimal ``p`` as written: ``complement(0.9) == 0.1`` (not 0.09999999999999998),
    so that ``c_p = 0.9`` gives ``rho = c_p / c_n = 9`` and costs print as users expect."""
    return float(1 - Fraction(repr(float(p))))


@dataclass(frozen=True, slots=True)
class Objective:
    """The weights of the two measures: ``alpha_p`` for sum, ``c_p`` for cost."""

    alpha_p: float = 0.5
    c_p: float = 0.9

    def __post_init__(self) -> None:
        for name in ("alpha_p", "c_p"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise ValueError(f"{name}: must lie in (0, 1), got {value!r}")


@dataclass(slots=True)
class Counts:
    """``T_p, T_n, M_p, M_n`` and the number of predicted positives among labelled rounds."""

    t_p: int = 0
    t_n: int = 0
    m_p: int = 0
    m_n: int = 0

    def add(self, y: int, yhat: int) -> None:
        if y == 1:
            self.t_p += 1
            self.m_p += yhat != 1
        else:
            self.t_n += 1
            self.m_n += yhat != -1

    def add_many(self, y: np.ndarray, yhat: np.ndarray) -> None:
        pos = y == 1
        self.t_p += int(pos.sum())
        self.t_n += int((~pos).sum())
        self.m_p += int((pos & (yhat != 1)).sum())
        self.m_n += int((~pos & (yhat != -1)).sum())


@dataclass(slots=True)
class Measures:
    """All-time running measures. ``update(y, yhat)`` once per labelled round."""

    objective: Objective = field(default_factory=Objective)
    counts: Counts = field(default_factory=Counts)

    def update(self, y: int, yhat: int) -> None:
        if y not in (-1, 1) or yhat not in (-1, 1):
            raise ValueError(f"y and yhat must be -1 or +1, got {y!r}, {yhat!r}")
        self.counts.add(y, yhat)

    @classmethod
    def of(cls, y: Iterable[int], yhat: Iterable[int], objective: Objective | None = None) -> Measures:
        """The measures of a whole stream of labels and online predictions."""
        m = cls(objective or Objective())
        m.counts.add_many(np.asarray(list(y) if not isinstance(y, np.ndarray) else y),
                          np.asarray(list(yhat) if not isinstance(yhat, np.ndarray) else yhat))  # fmt: skip
        return m

    @property
    def labels(self) -> int:
        return self.counts.t_p + self.counts.t_n

    @property
    def mistakes(self) -> int:
        return self.counts.m_p + self.counts.m_n

    @property
    def sensitivity(self) -> float:
        return _ratio(self.counts.t_p - self.counts.m_p, self.counts.t_p)

    @property
    def specificity(self) -> float:
        return _ratio(self.counts.t_n - self.counts.m_n, self.counts.t_n)

    @property
    def weighted_sum(self) -> float:
        a = self.objective.alpha_p
        return a * self.sensitivity + complement(a) * self.specificity

    @property
    def weighted_cost(self) -> float:
        c = self.objective.c_p
        return c * self.counts.m_p + complement(c) * self.counts.m_n

    @property
    def accuracy(self) -> float:
        return _ratio(self.labels - self.mistakes, self.labels)

    @property
    def rho_estimate(self) -> float:
        a = self.objective.alpha_p
        return a * (self.counts.t_n + 1.0) / (complement(a) * (self.counts.t_p + 1.0))

    def summary(self) -> dict[str, float | int]:
        """Counts and measures as a flat mapping (NaN where a class has no label yet)."""
        c = self.counts
        return {
            "t_p": c.t_p, "t_n": c.t_n, "m_p": c.m_p, "m_n": c.m_n,
            "sensitivity": self.sensitivity, "specificity": self.specificity,
            "weighted_sum": self.weighted_sum, "weighted_cost": self.weighted_cost,
            "accuracy": self.accuracy, "rho_estimate": self.rho_estimate,
        }  # fmt: skip

    def to_state(self) -> dict[str, Any]:
        c = self.counts
        return {"counts": np.array([c.t_p, c.t_n, c.m_p, c.m_n], dtype=np.int64)}

    def load_state(self, state: Mapping[str, Any]) -> None:
        t_p, t_n, m_p, m_n = (int(v) for v in np.asarray(state["counts"]))
        self.counts = Counts(t_p, t_n, m_p, m_n)


class WindowedMeasures(Measures):
    """The measures over the last ``size`` labels only (a ring buffer of ``(y, yhat)``)."""

    __slots__ = ("_filled", "_next", "_pairs", "size")

    def __init__(self, size: int, objective: Objective | None = None) -> None:
        if size < 1:
            raise ValueError(f"size: must be >= 1, got {size}")
        super().__init__(objective or Objective(), Counts())
        self.size = size
        self._pairs = np.zeros((size, 2), dtype=np.int8)
        self._next = 0
        self._filled = 0

    def update(self, y: int, yhat: int) -> None:
        if self._filled == self.size:
            old_y, old_yhat = (int(v) for v in self._pairs[self._next])
            self._remove(old_y, old_yhat)
        else:
            self._filled += 1
        super().update(y, yhat)
        self._pairs[self._next] = (y, yhat)
        self._next = (self._next + 1) % self.size

    def _remove(self, y: int, yhat: int) -> None:
        c = self.counts
        if y == 1:
            c.t_p -= 1
            c.m_p -= yhat != 1
        else:
            c.t_n -= 1
            c.m_n -= yhat != -1

    def to_state(self) -> dict[str, Any]:
        state = super().to_state()
        state.update(pairs=self._pairs.copy(), cursor=np.array([self._next, self._filled], dtype=np.int64))
        return state

    def load_state(self, state: Mapping[str, Any]) -> None:
        pairs = np.asarray(state["pairs"], dtype=np.int8)
        if pairs.shape != (self.size, 2):
            raise ValueError(f"window state has shape {pairs.shape}, expected {(self.size, 2)}")
        super().load_state(state)
        self._pairs = pairs.copy()
        self._next, self._filled = (int(v) for v in np.asarray(state["cursor"]))
