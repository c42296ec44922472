"""The *reporting* set: public streams used for no choice in this project.

The nine streams of :data:`bench.quality.protocol.TUNING` chose the defaults (the eta grid,
``loss="auto"``, the selection rule, the nonlinear members): claims made on them are in-sample.
The streams here were added after those choices and must never be used to make one; the
quality section reports them apart.

Every stream is built from data a package already ships (scikit-learn, river), from a file in
the data set registry that the quality study never read (``wdbc``, ``credit-a``), or from a
scikit-learn generator with a fixed seed. Rules fixed before any result was seen:

- one class against the rest takes the *first* class in the source's sorted order;
- a stream made imbalanced keeps every negative and a seeded sample of the positives,
  ``T_p = round(T_n / IMBALANCE)`` (``default_rng(SEED)``);
- a two-dimensional stream gets a constant third coordinate 1 before the protocol's L2
  normalisation: ``x / ||x||`` alone would project the plane onto the unit circle and erase the
  radius, which carries the class on ``circles`` (the homogeneous coordinate keeps ``x``
  recoverable as ``z[:2] / z[2]``). The same input goes to every system.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from service.datasets import Dataset, load

SEED = 0
IMBALANCE = 4.0
"""T_n / T_p of the streams made imbalanced."""


def _dataset(name: str, X: np.ndarray, positive: np.ndarray) -> Dataset:
    csr = sp.csr_matrix(np.asarray(X, dtype=np.float64))
    csr.sort_indices()
    csr.eliminate_zeros()
    return Dataset(name, csr, np.where(positive, 1, -1).astype(np.int8), None, name)


def imbalanced(
    X: np.ndarray, positive: np.ndarray, ratio: float = IMBALANCE
) -> tuple[np.ndarray, np.ndarray]:
    """Every negative and a seeded sample of ``round(T_n / ratio)`` positives, in the original order."""
    pos, neg = np.flatnonzero(positive), np.flatnonzero(~positive)
    keep_pos = min(len(pos), max(1, round(len(neg) / ratio)))
    chosen = np.random.default_rng(SEED).choice(pos, size=keep_pos, replace=False)
    rows = np.sort(np.concatenate([neg, chosen]))
    return X[rows], positive[rows]


def homogeneous(X: np.ndarray) -> np.ndarray:
    """``[x, 1]``: a constant coordinate so that L2 normalisation keeps the norm's information."""
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _digits() -> Dataset:
    from sklearn.datasets import load_digits

    X, t = load_digits(return_X_y=True)
    return _dataset("sklearn:digits-0", X, t == 0)


def _wine() -> Dataset:
    from sklearn.datasets import load_wine

    X, t = load_wine(return_X_y=True)
    return _dataset("sklearn:wine-0", X, t == 0)


def _segments() -> Dataset:
    from river.datasets import ImageSegments

    rows = list(ImageSegments())
    names = list(rows[0][0])
    X = np.array([[float(x[k]) for k in names] for x, _ in rows])
    labels = np.array([str(t) for _, t in rows])
    first = sorted(set(labels))[0]
    return _dataset(f"river:segments-{first}", X, labels == first)


def _bananas() -> Dataset:
    from river.datasets import Bananas

    rows = list(Bananas())
    X = np.array([[float(x["1"]), float(x["2"])] for x, _ in rows])
    positive = np.array([bool(t) for _, t in rows])
    X, positive = imbalanced(X, positive)
    return _dataset("river:bananas-imb", homogeneous(X), positive)


def _moons() -> Dataset:
    from sklearn.datasets import make_moons

    X, t = make_moons(n_samples=3000, noise=0.2, random_state=SEED)
    X, positive = imbalanced(X, t == 1)
    return _dataset("gen:moons-imb", homogeneous(X), positive)


def _circles() -> Dataset:
    from sklearn.datasets import make_circles

    X, t = make_circles(n_samples=3000, noise=0.1, factor=0.5, random_state=SEED)
    X, positive = imbalanced(X, t == 1)
    return _dataset("gen:circles-imb", homogeneous(X), positive)


def _registered(name: str) -> Callable[[], Dataset]:
    return lambda: load(name)


LOADERS: dict[str, Callable[[], Dataset]] = {
    "wdbc": _registered("wdbc"),
    "credit-a": _registered("credit-a"),
    "sklearn:digits-0": _digits,
    "sklearn:wine-0": _wine,
    "river:segments-brickface": _segments,
    "river:bananas-imb": _bananas,
    "gen:moons-imb": _moons,
    "gen:circles-imb": _circles,
}
"""The reporting set, by the name given on the command line."""
REPORTING = tuple(LOADERS)
