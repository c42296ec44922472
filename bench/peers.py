"""Peer online learners run on the same stream as ours: river, Vowpal Wabbit and scikit-learn.

Protocol (the one our learners follow, ``docs/learners.md`` section 7): the caller passes an
already L2-normalised CSR matrix ``X`` in the row order to stream (one permutation) and labels
``y`` in {+1, -1}, +1 being the anomaly class. For every row, in order, the peer first predicts
(that prediction is recorded), then learns the row with its true label. ``rho`` is the weight
of positive (+1) examples, negatives weigh 1: the cost-sensitive weight our learners use.

Predictions are ``+1`` when the peer's margin is ``>= 0`` (our convention ``sign(0) = +1``), so
the first prediction, made by an untrained model, is +1 for every peer.

What is timed: :attr:`PeerResult.seconds` is the wall time of the predict-then-learn loop only.
Everything a peer needs in its own input form is built *before* the clock starts, so that the
comparison is about learning rather than data conversion:

- river: each row as a ``{column: value}`` dict (a river user pays that conversion per example,
  but it is not learning); labels as ``bool`` (``True`` = +1), which river's binary classifiers
  and losses expect (its hinge loss maps ``y * 2 - 1``, so ±1 integers would be wrong).
- Vowpal Wabbit: each row formatted as a text example ``"<label> | <col>:<value> ..."`` and
  *parsed into a VW example* (``Workspace.parse``, in chunks of 1024 rows whose parsing is left
  out of the clock). The loop calls ``learn`` once per example and
  reads the prediction VW computed inside ``learn`` before its update: for the ``gd`` and
  ``OjaNewton`` learners this equals a separate ``predict`` before ``learn`` (checked by the tests)
  and costs one pass instead of two.
- scikit-learn: each row as a 1-row CSR matrix, the sample weights as 1-element arrays.

Peers (``PEERS``) and how each applies ``rho``:

- ``river-pa``: ``linear_model.PAClassifier(C=1, mode=1)`` (PA-I). No weights: ``rho`` ignored.
- ``river-alma``: ``linear_model.ALMAClassifier()`` (defaults). No weights: ``rho`` ignored.
- ``river-perceptron``: ``linear_model.Perceptron()``. ``learn_one(..., w=rho)`` for positives.
- ``river-logreg``: ``linear_model.LogisticRegression()`` (SGD, step 0.01). ``w=rho`` likewise.
- ``vw``: ``--loss_function logistic`` (VW's default adaptive, normalised, invariant updates).
  ``--classweight 1:<rho>``.
- ``vw-ojanewton``: ``--loss_function logistic --OjaNewton --sketch_size 5``. ``--classweight``.
- ``vw-q``: ``--loss_function logistic -q ::`` (every pair of features, the default namespace with
  itself: a quadratic model). ``--classweight``.
- ``vw-nn``: ``--loss_function logistic --nn 10`` (one hidden layer of 10 tanh units). ``--classweight``.
- ``sklearn-sgd``: ``SGDClassifier(loss="hinge", random_state=0)``, ``partial_fit`` one row at a
  time. ``sample_weight=[rho]`` for positives.
- ``sklearn-sgd-log``: the same with ``loss="log_loss"``.

Findings on the installed versions (river 0.26.1, vowpalwabbit 9.11.9, scikit-learn 1.9.1):

- river: ``LogisticRegression.learn_one(x, y, w=1.0)`` and ``Perceptron.learn_one`` (a subclass)
  accept a sample weight, which multiplies the loss gradient (weights and intercept alike);
  ``w=rho`` for positives is exactly a positive-class weight (same as ``optim.losses.Log(
  weight_pos=rho)``). ``PAClassifier.learn_one(x, y)`` and ``ALMAClassifier.learn_one(x, y)`` take
  no weight, so for them ``rho`` is ignored (a ``UserWarning`` says so and
  ``PeerResult.weighted`` is False).
- VW: ``--classweight 1:<rho>`` exists and works for the binary (scalar) learners: the
  ``classweight-scalar`` reduction multiplies the importance weight of examples whose label,
  cast to an unsigned int, is 1, i.e. the +1 class. Its predictions equal those of importance
  weights written in the label (``"1 <rho> | ..."``) bit for bit, and we use it. (A ``-1:<w>``
  key relies on a negative float cast to unsigned in C++, undefined behaviour, so we never
  pass one.) With ``--loss_function logistic`` and no ``--link``, VW's prediction is the raw
  margin (not a probability), so the sign is the class; ``--link``/``--binary`` are rejected.
  ``--OjaNewton`` is "online Newton with Oja's sketch" (Luo et al., NIPS 2016), a second-order
  learner keeping a rank-``sketch_size`` sketch of the gradient covariance, with defaults
  ``--epoch_size 1 --alpha 1 --learning_rate_cnt 2`` and normalisation and random
  initialisation on (seeded by ``--random_seed``, fixed to 0 here). Both workspaces also learn
  a constant (bias) feature, VW's default; pass ``args="--noconstant"`` to drop it.
- scikit-learn: ``partial_fit`` needs ``classes=[-1, 1]`` on the first call;
  ``decision_function`` before any fit raises ``NotFittedError``, so the first prediction is +1.
  Each call re-validates its input, which dominates the time per row.

Fairness caveats: every peer runs with its library's defaults (learning rates, intercepts,
hashing in VW with ``-b 18``), which are not tuned to these data; river-logreg's default SGD step
of 0.01 learns slowly on unit-norm rows. All peers except ALMA learn an intercept, while the
paper's ACOG has none. Pass constructor arguments through ``**params`` to change any of this.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["PEERS", "Peer", "PeerResult", "run_peer"]


@dataclass(frozen=True, eq=False)
class PeerResult:
    """What one peer did on one stream.

    Attributes:
        name: the peer's name in :data:`PEERS`.
        predictions: int8 array, one ±1 per row, each made *before* learning that row.
        seconds: wall time of the predict-then-learn loop only (no data conversion).
        weighted: whether ``rho`` was applied (False for peers without example weights, or rho = 1).
        settings: the effective configuration (constructor arguments, VW command line, rho).
    """

    name: str
    predictions: np.ndarray
    seconds: float
    weighted: bool = False
    settings: dict[str, Any] = field(default_factory=dict)


RunFn = Callable[[sp.csr_matrix, np.ndarray, float, dict[str, Any]], tuple[np.ndarray, float, dict[str, Any]]]


@dataclass(frozen=True)
class Peer:
    """One registered peer: its library, whether it takes example weights, and its runner."""

    name: str
    library: str
    supports_weights: bool
    description: str
    run: RunFn


# ----------------------------------------------------------------------------------------------
# river


def _river_rows(X: sp.csr_matrix) -> list[dict[int, float]]:
    indptr, indices, data = X.indptr, X.indices.tolist(), X.data.tolist()
    return [
        dict(zip(indices[s:e], data[s:e], strict=True))
        for s, e in zip(indptr[:-1].tolist(), indptr[1:].tolist(), strict=True)
    ]


def _make_river_runner(factory: str, defaults: dict[str, Any], weighted: bool) -> RunFn:
    def run(
        X: sp.csr_matrix, y: np.ndarray, rho: float, params: dict[str, Any]
    ) -> tuple[np.ndarray, float, dict[str, Any]]:
        from river import linear_model

        kwargs = {**defaults, **params}
        model = getattr(linear_model, factory)(**kwargs)
        rows = _river_rows(X)
        labels = (y == 1).tolist()
        preds = np.empty(len(rows), dtype=np.int8)
        predict = model.predict_proba_one
        learn = model.learn_one
        if weighted:
            weights = np.where(y == 1, rho, 1.0).tolist()
            start = time.perf_counter()
            for i, (x, t, w) in enumerate(zip(rows, labels, weights, strict=True)):
                preds[i] = 1 if predict(x)[True] >= 0.5 else -1
                learn(x, t, w=w)
        else:
            start = time.perf_counter()
            for i, (x, t) in enumerate(zip(rows, labels, strict=True)):
                preds[i] = 1 if predict(x)[True] >= 0.5 else -1
                learn(x, t)
        seconds = time.perf_counter() - start
        return preds, seconds, {"model": f"river.linear_model.{factory}", **kwargs}

    return run


# ----------------------------------------------------------------------------------------------
# Vowpal Wabbit

_VW_CHUNK = 1024
"""Examples parsed ahead of the clock at a time: parsing a whole stream first is super-linear in
VW's example pool (2.8 s for a9a's 48842 rows, against 0.25 s in chunks)."""

_VW_FORBIDDEN = ("--link", "--binary", "--passes", "-d", "--data", "--classweight")


def _vw_lines(X: sp.csr_matrix, y: np.ndarray) -> list[str]:
    indptr, indices, data = X.indptr, X.indices.tolist(), X.data.tolist()
    lines = []
    for r, (s, e) in enumerate(zip(indptr[:-1].tolist(), indptr[1:].tolist(), strict=True)):
        feats = " ".join(f"{j}:{v!r}" for j, v in zip(indices[s:e], data[s:e], strict=True))
        lines.append(f"{1 if y[r] == 1 else -1} | {feats}")
    return lines


def _make_vw_runner(base_args: str) -> RunFn:
    def run(
        X: sp.csr_matrix, y: np.ndarray, rho: float, params: dict[str, Any]
    ) -> tuple[np.ndarray, float, dict[str, Any]]:
        from vowpalwabbit import Workspace

        extra = str(params.pop("args", ""))
        if params:
            raise TypeError(f"unexpected VW parameters {sorted(params)}; pass VW flags as args='...'")
        for flag in extra.split():
            if flag.split("=")[0] in _VW_FORBIDDEN:
                raise ValueError(f"VW flag {flag} changes the protocol or the prediction scale")
        args = f"--quiet --random_seed 0 {base_args} {extra}".strip()
        if rho != 1.0:
            args += f" --classweight 1:{rho!r}"
        lines = _vw_lines(X, y)
        preds = np.empty(len(lines), dtype=np.int8)
        seconds = 0.0
        ws = Workspace(args)
        chunk: list[Any] = []
        try:
            learn = ws.learn
            finish = ws.finish_example
            for first in range(0, len(lines), _VW_CHUNK):
                chunk = [ws.parse(line) for line in lines[first : first + _VW_CHUNK]]
                start = time.perf_counter()
                for i, ex in enumerate(chunk, start=first):
                    learn(ex)  # VW predicts inside learn, before its update
                    preds[i] = 1 if ex.get_simplelabel_prediction() >= 0.0 else -1
                    finish(ex)
                seconds += time.perf_counter() - start
        finally:
            for ex in chunk:
                if not ex.finished:
                    ws.finish_example(ex)
            chunk.clear()
            ws.finish()
        return preds, seconds, {"args": args}

    return run


# ----------------------------------------------------------------------------------------------
# scikit-learn


def _make_sklearn_runner(defaults: dict[str, Any]) -> RunFn:
    def run(
        X: sp.csr_matrix, y: np.ndarray, rho: float, params: dict[str, Any]
    ) -> tuple[np.ndarray, float, dict[str, Any]]:
        from sklearn.linear_model import SGDClassifier

        kwargs = {"random_state": 0, **defaults, **params}
        model = SGDClassifier(**kwargs)
        n = X.shape[0]
        rows = [X[i] for i in range(n)]
        targets = [np.array([1 if t == 1 else -1]) for t in y]
        weights = [np.array([rho if t == 1 else 1.0]) for t in y]
        classes = np.array([-1, 1])
        preds = np.empty(n, dtype=np.int8)
        if n == 0:
            return preds, 0.0, {"model": "sklearn.linear_model.SGDClassifier", **kwargs}
        start = time.perf_counter()
        preds[0] = 1  # no model yet: decision_function would raise NotFittedError
        model.partial_fit(rows[0], targets[0], classes=classes, sample_weight=weights[0])
        decision = model.decision_function
        partial_fit = model.partial_fit
        for i in range(1, n):
            preds[i] = 1 if decision(rows[i])[0] >= 0.0 else -1
            partial_fit(rows[i], targets[i], sample_weight=weights[i])
        seconds = time.perf_counter() - start
        return preds, seconds, {"model": "sklearn.linear_model.SGDClassifier", **kwargs}

    return run


# ----------------------------------------------------------------------------------------------
# Registry and entry point

PEERS: dict[str, Peer] = {
    p.name: p
    for p in [
        Peer(
            name="river-pa",
            library="river",
            supports_weights=False,
            description="PA-I, C=1",
            run=_make_river_runner("PAClassifier", {"C": 1.0, "mode": 1}, weighted=False),
        ),
        Peer(
            name="river-alma",
            library="river",
            supports_weights=False,
            description="ALMA (Gentile 2001), p=2",
            run=_make_river_runner("ALMAClassifier", {}, weighted=False),
        ),
        Peer(
            name="river-perceptron",
            library="river",
            supports_weights=True,
            description="perceptron (hinge at 0, SGD step 1)",
            run=_make_river_runner("Perceptron", {}, weighted=True),
        ),
        Peer(
            name="river-logreg",
            library="river",
            supports_weights=True,
            description="logistic regression, SGD(0.01)",
            run=_make_river_runner("LogisticRegression", {}, weighted=True),
        ),
        Peer(
            name="vw",
            library="vowpalwabbit",
            supports_weights=True,
            description="VW gd, logistic loss",
            run=_make_vw_runner("--loss_function logistic"),
        ),
        Peer(
            name="vw-ojanewton",
            library="vowpalwabbit",
            supports_weights=True,
            description="VW OjaNewton, logistic loss, sketch 5",
            run=_make_vw_runner("--loss_function logistic --OjaNewton --sketch_size 5"),
        ),
        Peer(
            name="vw-q",
            library="vowpalwabbit",
            supports_weights=True,
            description="VW gd, logistic loss, quadratic interactions of all features (-q ::)",
            run=_make_vw_runner("--loss_function logistic -q ::"),
        ),
        Peer(
            name="vw-nn",
            library="vowpalwabbit",
            supports_weights=True,
            description="VW neural-network reduction, 10 hidden units (--nn 10), logistic loss",
            run=_make_vw_runner("--loss_function logistic --nn 10"),
        ),
        Peer(
            name="sklearn-sgd",
            library="scikit-learn",
            supports_weights=True,
            description="SGDClassifier(hinge), partial_fit per row",
            run=_make_sklearn_runner({"loss": "hinge"}),
        ),
        Peer(
            name="sklearn-sgd-log",
            library="scikit-learn",
            supports_weights=True,
            description="SGDClassifier(log_loss), partial_fit per row",
            run=_make_sklearn_runner({"loss": "log_loss"}),
        ),
    ]
}
"""The peers by name."""


def run_peer(
    name: str, X: sp.spmatrix | sp.sparray, y: np.ndarray, *, rho: float = 1.0, **params: Any
) -> PeerResult:
    """Run peer ``name`` predict-then-learn over the rows of ``X`` in order and return its predictions.

    ``X`` should already be L2-normalised (it is not rescaled here); ``y`` holds +1 / -1.
    ``rho`` weighs positive examples (ignored, with a ``UserWarning``, by peers without example
    weights). ``params`` go to the model's constructor (river, scikit-learn) or, as ``args="..."``,
    onto the VW command line.
    """
    try:
        peer = PEERS[name]
    except KeyError:
        raise KeyError(f"unknown peer {name!r}; known: {', '.join(PEERS)}") from None
    if not math.isfinite(rho) or rho <= 0:
        raise ValueError(f"rho must be a positive finite number, got {rho!r}")
    Xc = sp.csr_matrix(X, dtype=np.float64)
    labels = np.asarray(y)
    if labels.shape != (Xc.shape[0],):
        raise ValueError(f"y has shape {labels.shape}, expected ({Xc.shape[0]},)")
    if not np.isin(labels, (-1, 1)).all():
        raise ValueError("y must hold only +1 and -1")
    weighted = peer.supports_weights and rho != 1.0
    if rho != 1.0 and not peer.supports_weights:
        warnings.warn(f"{name} takes no example weights; rho={rho!r} is ignored", UserWarning, stacklevel=2)
    preds, seconds, settings = peer.run(Xc, labels, float(rho) if weighted else 1.0, dict(params))
    settings = {**settings, "rho": float(rho), "rho_applied": weighted}
    return PeerResult(name=name, predictions=preds, seconds=seconds, weighted=weighted, settings=settings)
