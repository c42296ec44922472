"""The protocol every system runs under: the data sets, the measures and the seeded row orders.

A :class:`Stream` is a data set ready to stream: every row scaled to unit L2 norm and the
permutations of its rows that every system sees, in the same order.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from bench.quality.reporting import LOADERS, REPORTING
from service.datasets import Dataset, l2_normalize, load
from service.learners import ALGORITHMS, InvalidParameter, create
from service.measures import Objective

TUNING = (
    "german", "australian", "dna", "mushrooms", "usps", "a9a", "ijcnn1",
    "sklearn:breast_cancer", "river:phishing",
)  # fmt: skip
"""The tuning set: the defaults (eta grid, ``loss="auto"``, the selection rule, the members) were
chosen on these nine, so results on them are in-sample."""
DATASETS = (*TUNING, *REPORTING)
SETS = {"tuning": TUNING, "reporting": REPORTING}
SEED = 0
SMALL_ROWS = 2500
ALPHA_P = 0.5
C_P = 0.9
COST_RHO = C_P / (1.0 - C_P)
PAPER_GRID = tuple(10.0**k for k in range(-5, 6))
METRICS = ("sum", "cost")
OBJECTIVE = Objective(ALPHA_P, C_P)


@dataclass(frozen=True)
class Stream:
    """A data set ready to stream: L2-normalised rows, ±1 labels and the row orders to use; ``raw``
    holds the rows as loaded, for the systems that normalise by themselves."""

    name: str
    X: sp.csr_matrix
    y: np.ndarray
    orders: np.ndarray
    raw: sp.csr_matrix

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def ratio(self) -> float:
        """``T_n / T_p`` of the whole data set (the sum-optimal rho the paper uses)."""
        return float(np.count_nonzero(self.y == -1) / max(1, int(np.count_nonzero(self.y == 1))))


def set_of(name: str) -> str:
    """``"tuning"``, ``"reporting"`` or ``"other"`` (a file given on the command line)."""
    return next((k for k, names in SETS.items() if name in names), "other")


def make_stream(data: Dataset, permutations: int, seed: int = SEED) -> Stream:
    rng = np.random.default_rng(seed)
    orders = np.stack([rng.permutation(data.n_samples) for _ in range(permutations)])
    raw = sp.csr_matrix(data.X, dtype=np.float64)
    return Stream(data.name, l2_normalize(raw), np.asarray(data.y, dtype=np.int64), orders, raw)


def load_stream(name: str, args: argparse.Namespace) -> Stream:
    if name in LOADERS:
        data = LOADERS[name]()
    elif os.path.exists(name):
        data = load(name, positive_label=args.positive_label)
    else:
        data = load(name)
    count = args.small_permutations if data.n_samples <= SMALL_ROWS else args.permutations
    return make_stream(data, count, args.seed)


def with_positive_share(stream: Stream, share: float, seed: int = SEED) -> Stream:
    """``stream`` with its positives subsampled (seeded) so that they make ``share`` of the rows, every
    negative kept in its place, and as many fresh orders as it had: an imbalanced variant of a data
    set (of the tuning set, for a study that must not read the reporting set)."""
    rng = np.random.default_rng([seed, round(share * 1e6)])
    positives, negatives = np.flatnonzero(stream.y == 1), np.flatnonzero(stream.y == -1)
    count = min(len(positives), max(5, round(share / (1.0 - share) * len(negatives))))
    keep = np.sort(np.concatenate([rng.choice(positives, count, replace=False), negatives]))
    orders = np.stack([rng.permutation(len(keep)) for _ in stream.orders])
    name = f"{stream.name}, {100 * share:g} % positives"
    return Stream(name, stream.X[keep], stream.y[keep], orders, stream.raw[keep])


def warm(stream: Stream) -> None:
    """Load every learner's compiled code before any clock starts."""
    X, y = stream.X[:4], stream.y[:4]
    for name in ALGORITHMS:
        for intercept in (False, True):
            try:
                create(name, stream.d, fit_intercept=intercept).run(X, y)
            except InvalidParameter:  # cannot be built for this d (a sketch larger than d, say)
                continue
