"""Peers that read *raw* features through online standardisation: river's trees, forests and kNN,
and VW with quadratic interactions.

Protocol (the one of :mod:`bench.peers`: predict each row, then learn it), with two differences
that give these peers their strongest honest set-up:

- **Input.** The raw rows (no per-example L2 normalisation, which erases the norm), each as a
  *dense* ``{column: value}`` dict (so that a zero counts in the running mean and variance), through
  river's ``preprocessing.StandardScaler`` in a pipeline (running mean and variance; a river
  pipeline transforms with the statistics before the row when predicting and learns the row into
  them first when learning).
- **Decision.** The river models give ``P(+|x)``; a run records it and the caller gets predictions
  for both measures from one pass: for **sum** (``alpha_p = 0.5``) positive when ``P(+|x) >= `` the
  running Laplace prior of positives ``(t_p + 1) / (t_p + t_n + 2)`` over the labels before the row
  (the balanced-error Bayes threshold for a calibrated posterior), for **cost** positive when
  ``P(+|x) >= c_n / (c_p + c_n) = 0.1`` (the cost-optimal threshold).

Peers (:data:`SCALED_PEERS`):

- ``river-amf``: ``forest.AMFClassifier(n_estimators=10, seed=0)`` (Aggregated Mondrian forest);
- ``river-arf``: ``forest.ARFClassifier(n_models=10, seed=0)`` (adaptive random forest);
- ``river-hat``: ``tree.HoeffdingAdaptiveTreeClassifier(seed=0)``;
- ``river-knn``: ``neighbors.KNNClassifier(n_neighbors=5, engine=neighbors.LazySearch(window_size=1000))``:
  exact search over the last 1000 examples. The classifier's default engine, ``SWINN``, searches the
  same window approximately, from an unseeded random graph (two runs of the same stream differ);
  exact search is the stronger set-up, and reproducible;
- ``vw-q-std``: VW ``--loss_function logistic -q ::`` on the rows standardised by river's
  ``StandardScaler`` online (each row with the statistics of the rows before it, computed before
  the clock starts), with the positive-class importance weight written into each label: the
  running Laplace ``rho = (t_n + 1) / (t_p + 1)`` of the labels before the row for sum, ``9`` for
  cost. VW predicts positive when its margin is ``>= 0``.

Timing (:attr:`ScaledResult.seconds`) is the predict-then-learn loop, the scaler included for the
river pipelines; the dict conversion (and VW's parsing and standardisation) is left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

C_P = 0.9
COST_THRESHOLD = 1.0 - C_P
"""``c_n / (c_p + c_n)`` with ``c_p + c_n = 1``."""
COST_WEIGHT = C_P / (1.0 - C_P)
METRICS = ("sum", "cost")


@dataclass(frozen=True, eq=False)
class ScaledResult:
    """One pass of a peer: predictions for each measure (±1, made before learning each row)."""

    name: str
    predictions: dict[str, np.ndarray]
    seconds: float
    settings: dict[str, Any]


def laplace_prior(y: np.ndarray) -> np.ndarray:
    """``(t_p + 1) / (t_p + t_n + 2)`` over the labels before each row."""
    pos = np.concatenate([[0], np.cumsum(y == 1)[:-1]]).astype(np.float64)
    seen = np.arange(y.shape[0], dtype=np.float64)
    return (pos + 1.0) / (seen + 2.0)


def laplace_rho(y: np.ndarray) -> np.ndarray:
    """``(t_n + 1) / (t_p + 1)`` over the labels before each row (alpha_p = 0.5)."""
    pos = np.concatenate([[0], np.cumsum(y == 1)[:-1]]).astype(np.float64)
    neg = np.arange(y.shape[0], dtype=np.float64) - pos
    return (neg + 1.0) / (pos + 1.0)


def dense_rows(X: sp.csr_matrix) -> list[dict[int, float]]:
    """Every row as a dict over *all* columns (zeros included)."""
    dense = np.asarray(X.todense(), dtype=np.float64)
    cols = range(dense.shape[1])
    return [dict(zip(cols, row, strict=True)) for row in dense.tolist()]


def river_model(name: str) -> Any:
    """A fresh river peer ``name`` (a key of :data:`SCALED_PEERS`) behind river's online
    ``StandardScaler``."""
    from river import forest, neighbors, preprocessing, tree

    models: dict[str, Callable[[], Any]] = {
        "river-amf": lambda: forest.AMFClassifier(n_estimators=10, seed=0),
        "river-arf": lambda: forest.ARFClassifier(n_models=10, seed=0),
        "river-hat": lambda: tree.HoeffdingAdaptiveTreeClassifier(seed=0),
        "river-knn": lambda: neighbors.KNNClassifier(
            n_neighbors=5, engine=neighbors.LazySearch(window_size=1000)
        ),
    }
    return preprocessing.StandardScaler() | models[name]()


def _run_river(name: str, X: sp.csr_matrix, y: np.ndarray) -> ScaledResult:
    model = river_model(name)
    rows = dense_rows(X)
    labels = (y == 1).tolist()
    proba = np.empty(len(rows), dtype=np.float64)
    predict, learn = model.predict_proba_one, model.learn_one
    start = time.perf_counter()
    for i, (x, t) in enumerate(zip(rows, labels, strict=True)):
        proba[i] = predict(x).get(True, 0.0)
        learn(x, t)
    seconds = time.perf_counter() - start
    preds = {
        "sum": np.where(proba >= laplace_prior(y), 1, -1).astype(np.int8),
        "cost": np.where(proba >= COST_THRESHOLD, 1, -1).astype(np.int8),
    }
    return ScaledResult(name, preds, seconds, {"model": str(model)})


def standardised_rows(X: sp.csr_matrix) -> list[dict[int, float]]:
    """Each row standardised by river's ``StandardScaler`` with the statistics of the rows before it."""
    from river import preprocessing

    scaler = preprocessing.StandardScaler()
    out = []
    for x in dense_rows(X):
        out.append(scaler.transform_one(x))
        scaler.learn_one(x)
    return out


VW_CHUNK = 1024


def _run_vw_q(X: sp.csr_matrix, y: np.ndarray, metric: str) -> tuple[np.ndarray, float, str]:
    from vowpalwabbit import Workspace

    weights = laplace_rho(y) if metric == "sum" else np.full(y.shape[0], COST_WEIGHT)
    lines = []
    for r, z in enumerate(standardised_rows(X)):
        feats = " ".join(f"{j}:{float(v)!r}" for j, v in z.items() if v != 0.0)
        label = f"1 {float(weights[r])!r}" if y[r] == 1 else "-1"
        lines.append(f"{label} | {feats}")
    args = "--quiet --random_seed 0 --loss_function logistic -q ::"
    preds = np.empty(len(lines), dtype=np.int8)
    seconds = 0.0
    ws = Workspace(args)
    try:
        for first in range(0, len(lines), VW_CHUNK):
            chunk = [ws.parse(line) for line in lines[first : first + VW_CHUNK]]
            start = time.perf_counter()
            for i, ex in enumerate(chunk, start=first):
                ws.learn(ex)  # VW predicts inside learn, before its update
                preds[i] = 1 if ex.get_simplelabel_prediction() >= 0.0 else -1
                ws.finish_example(ex)
            seconds += time.perf_counter() - start
    finally:
        ws.finish()
    return preds, seconds, args


def _run_vw(name: str, X: sp.csr_matrix, y: np.ndarray) -> ScaledResult:
    preds, seconds, args = {}, 0.0, ""
    for metric in METRICS:
        preds[metric], s, args = _run_vw_q(X, y, metric)
        seconds += s / len(METRICS)  # the mean pass: one pass per measure, as for weighted peers
    return ScaledResult(name, preds, seconds, {"args": args, "weights": "laplace rho (sum), 9 (cost)"})


SCALED_PEERS: dict[str, Callable[[str, sp.csr_matrix, np.ndarray], ScaledResult]] = {
    "river-amf": _run_river,
    "river-arf": _run_river,
    "river-hat": _run_river,
    "river-knn": _run_river,
    "vw-q-std": _run_vw,
}


def run_scaled_peer(name: str, X: sp.spmatrix | sp.sparray, y: np.ndarray) -> ScaledResult:
    """Peer ``name`` over the raw rows of ``X`` in order (labels ±1): predictions for both measures."""
    if name not in SCALED_PEERS:
        raise KeyError(f"unknown peer {name!r}; known: {', '.join(SCALED_PEERS)}")
    labels = np.asarray(y)
    if not np.isin(labels, (-1, 1)).all():
        raise ValueError("y must hold only +1 and -1")
    return SCALED_PEERS[name](name, sp.csr_matrix(X, dtype=np.float64), labels)
