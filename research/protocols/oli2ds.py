"""The OLI2DS code's evaluation protocol: incomplete streams simulated from complete tables.

As the authors' ``experiments.py`` runs it (``docs/learners.md`` §9, Reproduction):

1. standardise every feature over the whole set (sklearn's ``preprocessing.scale``: mean 0,
   population standard deviation 1, a constant column left at 0);
2. seed numpy's legacy generator once (``seed = 20``), then before each of ``rounds = 10`` rounds
   shuffle the rows with it;
3. simulate incompleteness, row ``i`` (0-based) of ``n``, ``d`` features:

   - **trapezoidal**: keep the features with index ``<= (⌊i / (n/10)⌋ + 1) ⌊(d+1)/10⌋``; the last
     row keeps all;
   - **capricious**: keep a random ``k`` of ``d + 1`` slots (slot ``d`` is a dummy), ``k`` starting at
     ``⌈(d+1)/2⌉`` and growing by that amount (capped at ``d + 1``) when ``(i+1) % ⌈n/2⌉ == 0``.
     The code draws with Python's unseeded ``random``; this is the seeded variant,
     ``RandomState(1000 + r).choice(d + 1, k, replace=False)`` for round ``r`` (0-based);

4. drop the zeros (the code reads 0 as missing: the learner runs with ``zero_is_missing``);
5. stream each row once: the prediction is ``sign(s)`` of the score ``learn`` computes, and a
   score of exactly 0 counts as a mistake;
6. report the final cumulative F1 (positive class +1) and G-mean ``√(sens · spec)`` (0 when a class
   is absent) of every round, and their mean ± standard deviation (ddof = 0) over the rounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from service.learners import create
from service.learners.inputs import SparseVector

Scheme = Literal["trapezoidal", "capricious"]
SCHEMES: tuple[Scheme, ...] = ("trapezoidal", "capricious")
ROUNDS = 10
SEED = 20
CAPRICIOUS_SEED_BASE = 1000

StreamRunner = Callable[[Sequence[SparseVector], np.ndarray, int], np.ndarray]
"""``(rows, labels, d) -> scores``: a fresh learner streams the rows (present features only) and
returns the score of each round."""


@dataclass(frozen=True, slots=True)
class RoundResult:
    """Final confusion counts of one round (+1 = positive)."""

    tp: int
    fn: int
    tn: int
    fp: int

    @property
    def f1(self) -> float:
        """``2 tp / (2 tp + fp + fn)`` (0 when there is nothing to count, as sklearn)."""
        den = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / den if den else 0.0

    @property
    def g_mean(self) -> float:
        """``√(tp/(tp+fn) · tn/(tn+fp))``, 0 when a class never occurs (the code's rule)."""
        if (self.tp + self.fn) * (self.tn + self.fp) == 0:
            return 0.0
        return math.sqrt(self.tp / (self.tp + self.fn) * (self.tn / (self.tn + self.fp)))


@dataclass(frozen=True, slots=True)
class ProtocolResult:
    """Every round of one data set under one scheme."""

    dataset: str
    scheme: Scheme
    rounds: tuple[RoundResult, ...]

    def _stat(self, values: list[float]) -> tuple[float, float]:
        return float(np.mean(values)), float(np.std(values))

    @property
    def f1(self) -> tuple[float, float]:
        """Mean and population standard deviation of the final F1."""
        return self._stat([r.f1 for r in self.rounds])

    @property
    def g_mean(self) -> tuple[float, float]:
        """Mean and population standard deviation of the final G-mean."""
        return self._stat([r.g_mean for r in self.rounds])


def standardise(X: np.ndarray) -> np.ndarray:
    """sklearn's ``preprocessing.scale`` over the whole table (what the code calls)."""
    try:
        from sklearn.preprocessing import scale  # the code's exact call; a bench extra, imported lazily
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "the oli2ds protocol needs scikit-learn: pip install 'acog-service[bench]'"
        ) from exc
    return np.asarray(scale(np.asarray(X, dtype=np.float64)), dtype=np.float64)


def shuffled_orders(n: int, rounds: int = ROUNDS, seed: int = SEED) -> list[np.ndarray]:
    """The row order of each round: one legacy generator seeded once, shuffled before every round
    (``np.random.shuffle`` of the table moves rows exactly as it moves ``arange(n)``)."""
    rng = np.random.RandomState(seed)
    orders = []
    for _ in range(rounds):
        order = np.arange(n)
        rng.shuffle(order)
        orders.append(order)
    return orders


def trapezoidal_kept(n: int, d: int) -> list[np.ndarray]:
    """Kept feature indices of each row under the trapezoidal scheme."""
    increment = (d + 1) // 10
    kept = []
    for i in range(n):
        limit = d - 1 if i == n - 1 else (int(i / (n / 10)) + 1) * increment
        kept.append(np.arange(min(limit, d - 1) + 1, dtype=np.int64))
    return kept


def capricious_kept(n: int, d: int, round_index: int) -> list[np.ndarray]:
    """Kept feature indices of each row under the seeded capricious scheme (slot ``d`` is a dummy)."""
    rng = np.random.RandomState(CAPRICIOUS_SEED_BASE + round_index)
    step = math.ceil((d + 1) * 0.5)
    chunk = math.ceil(n * 0.5)
    k = step
    kept = []
    for i in range(n):
        if (i + 1) % chunk == 0:
            k = min(k + step, d + 1)
        slots = rng.choice(d + 1, k, replace=False)
        kept.append(np.sort(slots[slots < d]).astype(np.int64))
    return kept


def incomplete_rows(X: np.ndarray, scheme: Scheme, round_index: int) -> list[SparseVector]:
    """The rows of the (already standardised, shuffled) table with the scheme's features only; zeros
    are kept here (the learner's ``zero_is_missing`` drops them)."""
    n, d = X.shape
    kept = trapezoidal_kept(n, d) if scheme == "trapezoidal" else capricious_kept(n, d, round_index)
    return [(idx, np.ascontiguousarray(X[i, idx])) for i, idx in enumerate(kept)]


def confusion(y: np.ndarray, scores: np.ndarray) -> RoundResult:
    """Counts with ``sign(s)`` as the prediction and ``s == 0`` counted as wrong."""
    y = np.asarray(y)
    predicted = np.where(scores > 0, 1, np.where(scores < 0, -1, -y))
    return RoundResult(
        tp=int(np.sum((y == 1) & (predicted == 1))),
        fn=int(np.sum((y == 1) & (predicted == -1))),
        tn=int(np.sum((y == -1) & (predicted == -1))),
        fp=int(np.sum((y == -1) & (predicted == 1))),
    )


def evaluate(
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    scheme: Scheme,
    runner: StreamRunner,
    rounds: int = ROUNDS,
    seed: int = SEED,
) -> ProtocolResult:
    """The whole protocol on a complete table ``X`` (``n x d``, dense) with labels ``y`` in ±1."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    Xs = standardise(X)
    y = np.asarray(y, dtype=np.int64)
    results = []
    for r, order in enumerate(shuffled_orders(X.shape[0], rounds, seed)):
        rows = incomplete_rows(Xs[order], scheme, r)
        scores = np.asarray(runner(rows, y[order], X.shape[1]), dtype=np.float64)
        results.append(confusion(y[order], scores))
    return ProtocolResult(name, scheme, tuple(results))


def rows_matrix(rows: Sequence[SparseVector], d: int) -> sp.csr_matrix:
    """The rows as a CSR matrix whose stored entries are exactly the present features."""
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(idx) for idx, _ in rows])
    indices = np.concatenate([idx for idx, _ in rows]) if rows else np.empty(0, np.int64)
    data = np.concatenate([val for _, val in rows]) if rows else np.empty(0)
    return sp.csr_matrix((data, indices, indptr), shape=(len(rows), d))


def learner_runner(**params: Any) -> StreamRunner:
    """A :data:`StreamRunner` on a fresh ``oli2ds`` learner per round, with ``zero_is_missing``
    (the code's reading of 0) unless ``params`` says otherwise."""
    params = {"zero_is_missing": True, **params}

    def run(rows: Sequence[SparseVector], y: np.ndarray, d: int) -> np.ndarray:
        learner = create("oli2ds", n_features=d, **params)
        return learner.run(rows_matrix(rows, d), y).scores

    return run
