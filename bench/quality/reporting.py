"""The *reporting* set: public streams used for no choice in this project.

The nine streams of :data:`bench.quality.protocol.TUNING` chose the defaults (the eta grid,
``loss="auto"``, the selection rule, the nonlinear members): claims made on them are in-sample.
The streams here were added after those choices and must never be used to make one; the
quality section reports them apart.

Every stream is built from data a package already ships (scikit-learn, river) or from a seeded
generator (scikit-learn's, river's). Rules fixed before any result was seen:

- one class against the rest takes the *first* class in the source's sorted order; a two-class
  source's positive class is its class ``1`` (``True``);
- a stream made imbalanced keeps every negative and a seeded sample of the positives,
  ``T_p = round(T_n / IMBALANCE)`` (``default_rng(SEED)``);
- a two-dimensional stream gets a constant third coordinate 1 before the protocol's L2
  normalisation: ``x / ||x||`` alone would project the plane onto the unit circle and erase the
  radius, which carries the class on ``circles`` (the homogeneous coordinate keeps ``x``
  recoverable as ``z[:2] / z[2]``). The same input goes to every system;
- river's synthetic streams (:data:`RIVER_SYNTH`) are every two-class generator of
  ``river.datasets.synth`` whose default set-up has no concept drift, with those defaults and seed
  ``SEED``: their first :data:`SYNTH_ROWS` examples, made imbalanced.

Two shared files were in this set until they were found to hold the data of two tuning streams:
``wdbc`` is scikit-learn's breast cancer data (the same 569 rows), and ``credit-a`` is the credit
approval data of ``australian`` (the same applicants, coded apart, 653 of 690 rows). Results on
them were in-sample, so they left the set, and river's synthetic streams came in by the rule above.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from service.datasets import Dataset

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


SYNTH_ROWS = 5000
"""Examples drawn from each of river's generators, before the positives are subsampled."""
RIVER_SYNTH: dict[str, tuple[str, dict[str, int]]] = {
    "agrawal": ("Agrawal", {"seed": SEED}),
    "rbf": ("RandomRBF", {"seed_model": SEED, "seed_sample": SEED}),
    "sine": ("Sine", {"seed": SEED}),
    "mixed": ("Mixed", {"seed": SEED}),
    "sea": ("SEA", {"seed": SEED}),
    "hyperplane": ("Hyperplane", {"seed": SEED}),
}
"""``river.datasets.synth``'s two-class generators without drift in their default set-up (the class
and its seed arguments): Agrawal (classification function 0), RandomRBF (2 classes, 10 features, 50
centroids), Sine (function 0), Mixed (function 0), SEA (variant 0, no noise), Hyperplane (10
features, ``mag_change`` 0, 5 % label noise)."""


def _synth(short: str) -> Callable[[], Dataset]:
    def generate() -> Dataset:
        from river.datasets import synth

        name, seeds = RIVER_SYNTH[short]
        rows = list(getattr(synth, name)(**seeds).take(SYNTH_ROWS))
        keys = list(rows[0][0])
        X = np.array([[float(x[k]) for k in keys] for x, _ in rows])
        X, positive = imbalanced(X, np.array([t is True or t == 1 for _, t in rows]))
        return _dataset(f"river:{short}-imb", homogeneous(X) if X.shape[1] == 2 else X, positive)

    return generate


LOADERS: dict[str, Callable[[], Dataset]] = {
    "sklearn:digits-0": _digits,
    "sklearn:wine-0": _wine,
    "river:segments-brickface": _segments,
    "river:bananas-imb": _bananas,
    "gen:moons-imb": _moons,
    "gen:circles-imb": _circles,
    **{f"river:{short}-imb": _synth(short) for short in RIVER_SYNTH},
}
"""The reporting set, by the name given on the command line."""
REPORTING = tuple(LOADERS)
