"""A readable reference of the nearest-neighbour learner (``knn``, :mod:`service.learners.knn`), on
dense vectors: the specification the kernels are tested against (``tests/learners/test_knn.py`` and
``tests/learners/test_maths.py``). It is not used by the service. A step has the shape of every
reference step (:mod:`research.reference.steps`).

The state is ``{"examples": (window, D), "labels": (window,), "seen": (1,)}``; a step writes the
labelled example over the oldest slot and returns a new state, leaving its arguments alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Model = dict[str, Any]


def initial_model(d: int, p: dict[str, Any]) -> Model:
    window = int(p.get("window", 1000))
    return {
        "examples": np.zeros((window, d)),
        "labels": np.zeros(window, dtype=np.int8),
        "seen": np.zeros(1, dtype=np.int64),
    }


def neighbours(model: Model, x: np.ndarray, k: int) -> list[tuple[float, int]]:
    """The ``min(k, stored)`` nearest stored examples as ``(squared distance, label)``, nearest
    first; a tie goes to the more recent example. Distances are summed in feature order."""
    window, seen = model["labels"].shape[0], int(model["seen"][0])
    candidates = []
    for age in range(min(seen, window)):  # age 0: the newest
        slot = (seen - 1 - age) % window
        d2 = 0.0
        for a, b in zip(model["examples"][slot], x, strict=True):
            diff = float(a) - float(b)
            d2 += diff * diff
        candidates.append((d2, age, int(model["labels"][slot])))
    return [(d2, label) for d2, _, label in sorted(candidates)[:k]]


def proba(model: Model, x: np.ndarray, p: dict[str, Any]) -> tuple[float, float]:
    """``(P(+|x), P(-|x))``: the neighbours' votes, scaled to sum to their number ``m``, smoothed
    by the Dirichlet prior ``a``: ``(n_c + a) / (m + 2 a)``."""
    near = neighbours(model, x, int(p.get("k", 5)))
    m, a = len(near), float(p.get("dirichlet", 0.5))
    exact = m > 0 and near[0][0] == 0.0
    pos = neg = 0.0
    for d2, label in near:
        if p.get("weighting", "distance") == "uniform":
            w = 1.0
        elif exact:  # examples equal to x vote alone: the limit of 1 / distance
            w = 1.0 if d2 == 0.0 else 0.0
        else:
            w = 1.0 / math.sqrt(d2)
        if label > 0:
            pos += w
        else:
            neg += w
    n_pos = m * pos / (pos + neg) if m else 0.0
    n_neg = m * neg / (pos + neg) if m else 0.0
    return (n_pos + a) / (m + 2 * a), (n_neg + a) / (m + 2 * a)


def score(model: Model, x: np.ndarray, p: dict[str, Any], rho: float) -> float:
    """The cost-optimal decision: ``log(P(+|x) / P(-|x)) + log(rho)``."""
    pos, neg = proba(model, x, p)
    return math.log(pos) - math.log(neg) + math.log(rho)


def step(model: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    """``(x, y)`` replaces the oldest stored example."""
    examples, labels, seen = model["examples"].copy(), model["labels"].copy(), model["seen"].copy()
    slot = int(seen[0]) % labels.shape[0]
    examples[slot] = x
    labels[slot] = 1 if y > 0 else -1
    seen[0] += 1
    return {"examples": examples, "labels": labels, "seen": seen}
