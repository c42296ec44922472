"""``knn``: the k nearest neighbours over a sliding window of labelled examples, behind the learner
contract, compiled.

**The state** is a ring buffer: the last ``window`` labelled examples (``examples``, ``window x D``
floats for ``D`` coordinates, the intercept included) and their labels (``labels``, +1/-1; 0 in a
slot not yet written), and ``seen``, how many labels it has stored since it started (the next one
goes to slot ``seen mod window``). Nothing else is learned: learning writes one row, O(D).

**Prediction** for ``x``: the squared Euclidean distance to every stored example, summed in
feature order; the ``m = min(k, stored)`` nearest, ties going to the more recent example. Each
votes for its label with weight ``1 / distance`` (``weighting: "distance"``, the default, as
river's; when some stored examples equal ``x``, they alone vote, weight 1 each: the limit of
``1 / distance``) or 1 (``"uniform"``). The votes are scaled to sum to ``m``,
``n_+ = m W_+ / (W_+ + W_-)`` and ``n_- = m W_- / (W_+ + W_-)``, and smoothed with the
Dirichlet prior ``a`` (``dirichlet``; 0.5 is Jeffreys): ``P(+|x) = (n_+ + a) / (m + 2 a)``,
``P(-|x) = (n_- + a) / (m + 2 a)``. The score is the cost-optimal decision on that posterior,
exactly as the forest's (:mod:`service.learners.posterior`): ``log(P(+|x) / P(-|x)) + log(rho)``,
>= 0 exactly when ``P(+|x) >= 1 / (1 + rho)``. An empty buffer gives ``P = 1/2`` and the score
``log(rho)`` (0 with the Laplace rho: a fresh model flags everything). Each prediction costs
O(window x D), four stored examples at a time.

No randomness: the same labels in the same order give the same bits, so replicas, recovery and
checkpoints agree. Memory is fixed at creation, ``window x (8 D + 1)`` bytes; a model whose
buffer does not fit ``memory_budget`` is refused naming ``window``. Hyper-parameters: ``k`` (5),
``window`` (1000), ``weighting`` (``"distance"``; river's ``KNNClassifier`` defaults, and the
distance vote edged the plain one on the tuning set), ``dirichlet`` (0.5); ``rho``/``alpha_p`` set
the decision threshold. There is no linear weight vector (``weights()`` is empty) and no schema
migration (the stored rows live in the input schema).
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from ..jit_cache import kernel
from .base import Learner, positive
from .covariance import DEFAULT_MEMORY_BUDGET, memory_budget
from .errors import InvalidInput, InvalidParameter
from .nonlinear import bounded_int
from .posterior import bias, decision_loss, decision_score, dense

KNNState = namedtuple("KNNState", ["counts", "hyper", "seen", "examples", "labels"])
"""The learner's state: ``counts`` (the driver's ``[t_p, t_n]``), ``hyper``, ``seen`` (one int64),
the ring buffer ``examples`` (``window x D``) and ``labels`` (``window``, int8)."""

HYPER = ("k", "weighting", "dirichlet", "rho_mode", "rho_fixed", "alpha_p")
"""The entries of ``hyper``, in order (``weighting``: 0 uniform, 1 distance)."""
K, WEIGHTING, DIRICHLET, RHO_MODE, RHO_FIXED, ALPHA_P = range(len(HYPER))
WEIGHTINGS = ("uniform", "distance")
MAX_WINDOW = 1_000_000
MAX_K = 1000


@kernel
def squared_distances(ex: np.ndarray, x: np.ndarray, rows: int) -> np.ndarray:
    """``||ex[s] - x||^2`` for the first ``rows`` rows of ``ex``, each summed in feature order. Four
    rows at a time, each in its own sum: the same operations in the same order per row (the same
    bits), but four independent chains of additions instead of one."""
    out = np.empty(rows)
    n = x.shape[0]
    s = 0
    while s + 4 <= rows:
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        for j in range(n):
            xj = x[j]
            d0 = ex[s, j] - xj
            d1 = ex[s + 1, j] - xj
            d2 = ex[s + 2, j] - xj
            d3 = ex[s + 3, j] - xj
            a0 += d0 * d0
            a1 += d1 * d1
            a2 += d2 * d2
            a3 += d3 * d3
        out[s] = a0
        out[s + 1] = a1
        out[s + 2] = a2
        out[s + 3] = a3
        s += 4
    for r in range(s, rows):
        a = 0.0
        for j in range(n):
            d = ex[r, j] - x[j]
            a += d * d
        out[r] = a
    return out


@kernel
def nearest(st: Any, x: np.ndarray, dist: np.ndarray, slot: np.ndarray) -> int:
    """The ``m = min(k, stored)`` stored examples nearest to ``x``, in order of (squared distance,
    age): their squared distances in ``dist[:m]``, their slots in ``slot[:m]``; returns ``m``.

    Every stored example's squared distance is summed in feature order
    (:func:`squared_distances`); the examples are then visited newest first and one enters only
    when strictly nearer than the k-th so far, so a tie goes to the newer."""
    window = st.labels.shape[0]
    k = dist.shape[0]
    seen = st.seen[0]
    stored = min(seen, window)
    d2s = squared_distances(st.examples, x, stored)
    newest = (seen - 1) % window
    m = 0
    for age in range(stored):
        s = newest - age if age <= newest else newest - age + window
        d2 = d2s[s]
        if d2 >= (dist[k - 1] if m == k else math.inf):
            continue
        i = m if m < k else k - 1
        while i > 0 and dist[i - 1] > d2:
            dist[i] = dist[i - 1]
            slot[i] = slot[i - 1]
            i -= 1
        dist[i] = d2
        slot[i] = s
        if m < k:
            m += 1
    return m


@kernel
def knn_proba(st: Any, x: np.ndarray) -> tuple[float, float]:
    """``(P(+|x), P(-|x))``: the smoothed vote of the nearest examples (the module docstring)."""
    h = st.hyper
    k = int(h[K])
    dist = np.empty(k)
    slot = np.empty(k, dtype=np.int64)
    m = nearest(st, x, dist, slot)
    pos = 0.0
    neg = 0.0
    exact = m > 0 and dist[0] == 0.0
    for i in range(m):
        if h[WEIGHTING] == 0.0:
            w = 1.0
        elif exact:
            w = 1.0 if dist[i] == 0.0 else 0.0
        else:
            w = 1.0 / math.sqrt(dist[i])
        if st.labels[slot[i]] > 0:
            pos += w
        else:
            neg += w
    n_pos = 0.0
    n_neg = 0.0
    if m > 0:
        n_pos = m * pos / (pos + neg)
        n_neg = m * neg / (pos + neg)
    a = h[DIRICHLET]
    return (n_pos + a) / (m + 2.0 * a), (n_neg + a) / (m + 2.0 * a)


@kernel
def knn_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    """``log(p / q) + log(rho)``: its sign is the cost-optimal decision ``p >= 1 / (1 + rho)``."""
    h = st.hyper
    p, q = knn_proba(st, dense(idx, val, st.examples.shape[1]))
    return decision_score(p, q, bias(st.counts, h[RHO_MODE], h[RHO_FIXED], h[ALPHA_P]))


@kernel
def knn_update(st: Any, p: Any, idx: np.ndarray, val: np.ndarray, y: int, score: float,
               rho: float) -> tuple[float, bool]:  # fmt: skip
    """``(x, y)`` takes the oldest slot; returns the log-loss of the posterior on ``y`` before the
    update and ``True`` (every label changes the buffer)."""
    s = st.seen[0] % st.labels.shape[0]
    st.examples[s] = dense(idx, val, st.examples.shape[1])
    st.labels[s] = 1 if y > 0 else -1
    st.seen[0] += 1
    return decision_loss(y, score, rho), True


def weighting_value(value: Any) -> str:
    if value not in WEIGHTINGS:
        choices = ", ".join(map(repr, WEIGHTINGS))
        raise InvalidParameter("weighting", f"must be one of {choices}, got {value!r}")
    return str(value)


def buffer_nbytes(n_features: int, params: Mapping[str, Any]) -> int:
    """Bytes of the ring buffer of ``create("knn", n_features, **params)``: ``window x (8 D + 1)``."""
    dim = n_features + (1 if params.get("fit_intercept", False) else 0)
    window = int(params.get("window", KNN.own_params["window"][0]))
    return window * (8 * dim + 1)


class KNN(Learner):
    """The k nearest neighbours over the last ``window`` labels; see the module docstring."""

    algorithm = "knn"
    own_params: ClassVar[dict[str, tuple[Any, Callable[[Any], Any]]]] = {
        "k": (5, bounded_int("k", MAX_K)),
        "window": (1000, bounded_int("window", MAX_WINDOW)),
        "weighting": ("distance", weighting_value),
        "dirichlet": (0.5, positive("dirichlet")),
        "memory_budget": (DEFAULT_MEMORY_BUDGET, memory_budget),
    }
    state_type = KNNState
    kernels = (knn_score, knn_update)

    @staticmethod
    def full_nbytes(n_features: int, params: Mapping[str, Any]) -> int:
        """The most memory a member of these parameters takes (for the ensemble's roster)."""
        return buffer_nbytes(n_features, params)

    def _check_params(self) -> None:
        need, budget = buffer_nbytes(self.n_features, self.params), self.params["memory_budget"]
        if need > budget:
            raise InvalidParameter(
                "window",
                f"a window of {self.params['window']} examples over {self.dim} coordinates takes "
                f"{need / 2**20:.1f} MiB, over the memory budget of {budget / 2**20:.1f} MiB: "
                "a shorter window",
            )

    def _hyper(self) -> np.ndarray:
        p, rho = self.params, self._rho_cfg
        values = {
            "k": float(p["k"]), "weighting": float(WEIGHTINGS.index(p["weighting"])),
            "dirichlet": p["dirichlet"],
            "rho_mode": float(rho.mode), "rho_fixed": rho.fixed, "alpha_p": rho.alpha_p,
        }  # fmt: skip
        return np.array([values[name] for name in HYPER], dtype=np.float64)

    def _init_arrays(self) -> dict[str, np.ndarray]:
        window = int(self.params["window"])
        return {
            "hyper": self._hyper(),
            "seen": np.zeros(1, dtype=np.int64),
            "examples": np.zeros((window, self.dim), dtype=np.float64),
            "labels": np.zeros(window, dtype=np.int8),
        }

    def weights(self) -> np.ndarray:
        """Empty: the neighbours have no linear weight vector."""
        return np.zeros(0)

    def describe(self) -> dict[str, Any]:
        """``"neighbours"``: k, the window, the weighting and how many examples are stored."""
        p = self.params
        stored = min(int(self._arrays["seen"][0]), int(p["window"]))
        facts = {"k": p["k"], "window": p["window"], "weighting": p["weighting"], "stored": stored}
        return {"neighbours": facts}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """The base checks, plus: ``hyper`` is this configuration's, ``seen`` is a count, the
        stored slots hold finite examples and labels +1/-1 and the others are empty, before
        anything changes."""
        self._refuse_if_borrowed()
        problem = self._content_problem(state)
        if problem is not None:
            raise InvalidInput("state", problem)
        super().load_state(state)

    def _content_problem(self, state: Mapping[str, Any]) -> str | None:
        """What is wrong with the contents of ``state``; ``None`` also when an array is missing or
        mistyped, which the base checks report."""
        try:
            hyper, seen = np.asarray(state["hyper"]), np.asarray(state["seen"])
            examples, labels = np.asarray(state["examples"]), np.asarray(state["labels"])
            if not np.array_equal(hyper, self._hyper(), equal_nan=True):
                return "hyper does not match this model's configuration"
            if seen.shape != (1,) or int(seen[0]) < 0:
                return "seen must be one count >= 0"
            stored = min(int(seen[0]), labels.shape[0])
            if not np.isin(labels[:stored], (-1, 1)).all() or labels[stored:].any():
                return "labels must be +1 or -1 in the stored slots and 0 in the others"
            if not np.isfinite(examples).all():
                return "examples must be finite"
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None
        return None
