"""OPID, the readable reference: Hou & Zhou, *One-Pass Learning with Incremental and Decremental
Features* (arXiv 1605.09082), as ``docs/learners.md`` §10 specifies it.

The feature set changes once, from ``O = V ∪ S`` (vanished + survived, ``d = |O|``) to
``N = S ∪ A`` (survived + augmented). Rows are examples; ``Y`` has ``c`` target columns (the
binary service: ``c = 1``, target ``y`` in {-1, +1}; the paper's multi-class tables: one-vs-rest
±1 columns).

**C-stage** (eq. 2). On the old features, learn ``W~`` (on O) and ``Wˢ`` (on S) jointly::

    min ||X~ W~ - Y||² + ||Xˢ Wˢ - Y||² + λ ||X~ W~ - Xˢ Wˢ||² + r (||W~||² + ||Wˢ||²)

(``r`` is the paper's ρ, the ridge; this project keeps ``rho`` for the cost ratio.) Setting the
gradient to zero gives Prop. 1, ``A [W~; Wˢ] = B`` with::

    A = [[(1+λ) G + r I,   -λ G[:, S]          ],      B = [ H    ]
         [-λ G[S, :],      (1+λ) G[S, S] + r I ]]          [ H[S] ]

``G = Σ x x'`` (d × d) and ``H = Σ x y'`` (d × c): every block is a sub-block of the two running
sums, so S need not be known while the sums are kept, and batch sizes do not matter
(:class:`WeightedSums`, :func:`prop1_system`, :func:`c_stage_solve`). Prop. 2 is the same solve kept
as a running inverse by the Woodbury identity, for an S fixed in advance (:class:`WoodburyCStage`).
Only ``Wˢ*`` leaves the stage.

**E-stage** (eqs. 16-17, Φ = identity). With ``Zˢ = Xˢ Wˢ*``, ``M = [Zˢ, Zˢ, Xᵃ]`` (n × (2c + dₐ))::

    min_{V, w}  ||M V - Y||² + γ (||Vˢ||² / (c w₁) + ||V̄||² / ((c+dₐ) w₂)),   w₁ + w₂ = 1, w ≥ 0

with ``V = [Vˢ; V̄]`` (``Vˢ`` the first c rows). It alternates Prop. 4 (``V`` for fixed ``w``: a ridge
solve from ``M'M`` and ``M'Y``) and Prop. 3 (``w`` for fixed ``V``: ``w ∝ (a, b)`` with
``a = ||Vˢ|| / √c``, ``b = ||V̄|| / √(c+dₐ)``, where the penalty's minimum is ``γ (a + b)²``), from
``w₁ = w₂ = ½``, until ``|ΔJ| <= 1e-10 max(1, J)`` or 100 rounds, with ``J = ||MV - Y||² + γ (a+b)²``.
J is jointly convex in ``(V, w)`` (``||v||² / w`` is a perspective), so the alternation never
increases it (:func:`e_stage_fit`). The prediction is ``f(x) = m(x) V`` with
``m(x) = [xˢ Wˢ*, xˢ Wˢ*, xᵃ]``: ``sign`` for c = 1, ``argmax`` otherwise.

**Cost weights** (binary, [decision] of the spec). Every sum is also kept over the positive
(anomaly) class alone, and the solves use ``G(ρ) = ρ G₊ + G₋``, computed as ``G + (ρ - 1) G₊``:
the current ρ then weighs all past data, and ρ = 1 gives the unweighted sums bit for bit
(``G + 0·G₊`` is ``G``).

Everything here is dense numpy/scipy written for reading, not speed; the learner
(:mod:`service.learners.opid.learner`) reuses the one-off solves and is tested against the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

TOLERANCE = 1e-10
"""E-stage stop: ``|J_k - J_{k-1}| <= TOLERANCE * max(1, J_k)``."""
MAX_ROUNDS = 100
"""E-stage stop: at most this many rounds of Prop. 4 then Prop. 3."""
GAMMAS = (1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3)
"""The spec's grid for γ, chosen by 5-fold cross-validation."""


def as_targets(Y: np.ndarray) -> np.ndarray:
    """``Y`` as an (n, c) float matrix (a vector of ±1 labels becomes one column)."""
    arr = np.asarray(Y, dtype=np.float64)
    return arr[:, None] if arr.ndim == 1 else arr


def one_vs_rest(labels: np.ndarray, classes: Sequence[int] | np.ndarray) -> np.ndarray:
    """±1 one-vs-rest target columns, one per class in ``classes`` (the spec's [decision] targets)."""
    labels = np.asarray(labels)
    return np.where(labels[:, None] == np.asarray(classes)[None, :], 1.0, -1.0)


# --------------------------------------------------------------------------- the running sums


@dataclass
class WeightedSums:
    """``P'P``, ``P'Y`` and ``Σ ||y||²`` over all rows, and again over the positive rows alone.

    The C-stage keeps them for ``P = X~`` (``G``, ``H``), the E-stage for ``P = M``. Rows may be
    added one at a time or in batches of any size: the sums are the same (to rounding).
    """

    gram: np.ndarray  # Σ p p'      (k × k)
    cross: np.ndarray  # Σ p y'     (k × c)
    targets: float  # Σ ||y||²
    gram_pos: np.ndarray  # the same three over the positive rows
    cross_pos: np.ndarray
    targets_pos: float
    count: int = 0

    @classmethod
    def empty(cls, k: int, c: int = 1) -> WeightedSums:
        return cls(np.zeros((k, k)), np.zeros((k, c)), 0.0, np.zeros((k, k)), np.zeros((k, c)), 0.0)

    def add(self, P: np.ndarray, Y: np.ndarray, positive: np.ndarray | None = None) -> None:
        """Add the rows of ``P`` (n × k) with targets ``Y`` (n × c, or n labels); ``positive`` marks
        the anomaly rows (default: none, which leaves the positive sums at zero)."""
        P = np.atleast_2d(np.asarray(P, dtype=np.float64))
        Y = as_targets(Y).reshape(P.shape[0], -1)
        self.gram += P.T @ P
        self.cross += P.T @ Y
        self.targets += float(np.sum(Y * Y))
        if positive is not None:
            pos = np.asarray(positive, dtype=bool)
            self.gram_pos += P[pos].T @ P[pos]
            self.cross_pos += P[pos].T @ Y[pos]
            self.targets_pos += float(np.sum(Y[pos] * Y[pos]))
        self.count += P.shape[0]

    def weighted(self, rho: float = 1.0) -> tuple[np.ndarray, np.ndarray, float]:
        """``(ρ P₊'P₊ + P₋'P₋, ρ P₊'Y₊ + P₋'Y₋, ρ ||Y₊||² + ||Y₋||²)``, written as ``S + (ρ - 1) S₊`` so
        that ρ = 1 returns the unweighted sums bit for bit."""
        extra = rho - 1.0
        return (
            self.gram + extra * self.gram_pos,
            self.cross + extra * self.cross_pos,
            self.targets + extra * self.targets_pos,
        )


# --------------------------------------------------------------------------- C-stage


def spd_solve(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A⁻¹ B`` for a symmetric positive definite ``A`` (a Cholesky solve)."""
    return scipy.linalg.cho_solve(scipy.linalg.cho_factor(A, check_finite=False), B, check_finite=False)


def prop1_system(
    G: np.ndarray, H: np.ndarray, survived: Sequence[int] | np.ndarray, lam: float = 1.0, ridge: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Prop. 1's ``A`` ((d+s) × (d+s)) and ``B`` ((d+s) × c), assembled from sub-blocks of G and H."""
    S = np.asarray(survived, dtype=np.int64)
    d, s = G.shape[0], S.size
    A = np.empty((d + s, d + s))
    A[:d, :d] = (1.0 + lam) * G + ridge * np.eye(d)
    A[:d, d:] = -lam * G[:, S]
    A[d:, :d] = -lam * G[S, :]
    A[d:, d:] = (1.0 + lam) * G[np.ix_(S, S)] + ridge * np.eye(s)
    B = np.vstack([H, H[S]])
    return A, B


@dataclass(frozen=True)
class CStageSolution:
    """``W~`` (on O, d × c) and ``Wˢ*`` (on S, s × c): the minimiser of eq. (2)."""

    W_full: np.ndarray
    W_survived: np.ndarray


def c_stage_solve(
    G: np.ndarray, H: np.ndarray, survived: Sequence[int] | np.ndarray, lam: float = 1.0, ridge: float = 1.0
) -> CStageSolution:
    """Solve Prop. 1 (A is symmetric positive definite for ``ridge > 0``)."""
    A, B = prop1_system(G, H, survived, lam, ridge)
    W = spd_solve(A, B)
    d = G.shape[0]
    return CStageSolution(W[:d], W[d:])


def stacked_least_squares(
    X: np.ndarray, Y: np.ndarray, survived: Sequence[int] | np.ndarray, lam: float = 1.0, ridge: float = 1.0
) -> CStageSolution:
    """Eq. (2) solved directly as one least-squares problem over stacked rows (no sums): the check
    that Prop. 1 is the minimiser::

        [ X~      0     ]            [ Y ]
        [ 0       Xˢ    ] [W~ ]  ≈   [ Y ]
        [ √λ X~  -√λ Xˢ ] [Wˢ ]      [ 0 ]
        [ √r I          ]            [ 0 ]
    """
    X = np.asarray(X, dtype=np.float64)
    Y = as_targets(Y)
    S = np.asarray(survived, dtype=np.int64)
    n, d = X.shape
    s = S.size
    Xs = X[:, S]
    rows = np.vstack(
        [
            np.hstack([X, np.zeros((n, s))]),
            np.hstack([np.zeros((n, d)), Xs]),
            np.hstack([np.sqrt(lam) * X, -np.sqrt(lam) * Xs]),
            np.sqrt(ridge) * np.eye(d + s),
        ]
    )
    rhs = np.vstack([Y, Y, np.zeros((n + d + s, Y.shape[1]))])
    W = np.linalg.lstsq(rows, rhs, rcond=None)[0]
    return CStageSolution(W[:d], W[d:])


class WoodburyCStage:
    """Prop. 2: ``A⁻¹`` kept current batch by batch, for a survived set fixed in advance.

    From ``A₀⁻¹ = I / r``, each batch adds ``U U'`` to A with
    ``U = [[X~', 0, √λ X~'], [0, Xˢ', -√λ Xˢ']]`` ((d+s) × 3n), so by the Woodbury identity::

        A⁻¹ <- A⁻¹ - A⁻¹ U (I + U' A⁻¹ U)⁻¹ U' A⁻¹

    at O(D² n) per batch (D = d + s), and ``B += [X~'; Xˢ'] Y``.
    """

    def __init__(
        self, d: int, survived: Sequence[int] | np.ndarray, c: int = 1, lam: float = 1.0, ridge: float = 1.0
    ):
        self.survived = np.asarray(survived, dtype=np.int64)
        self.lam = lam
        size = d + self.survived.size
        self.A_inv = np.eye(size) / ridge
        self.B = np.zeros((size, c))

    def add(self, X: np.ndarray, Y: np.ndarray) -> None:
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        Y = as_targets(Y).reshape(X.shape[0], -1)
        Xs = X[:, self.survived]
        n, d = X.shape
        s = self.survived.size
        root = np.sqrt(self.lam)
        U = np.zeros((d + s, 3 * n))
        U[:d, :n] = X.T
        U[d:, n : 2 * n] = Xs.T
        U[:d, 2 * n :] = root * X.T
        U[d:, 2 * n :] = -root * Xs.T
        AU = self.A_inv @ U
        inner = np.eye(3 * n) + U.T @ AU
        self.A_inv -= AU @ np.linalg.solve(inner, AU.T)
        self.B += np.vstack([X.T @ Y, Xs.T @ Y])

    def solution(self) -> CStageSolution:
        W = self.A_inv @ self.B
        d = W.shape[0] - self.survived.size
        return CStageSolution(W[:d], W[d:])


def ridge_weights(G: np.ndarray, H: np.ndarray, ridge: float = 1.0) -> np.ndarray:
    """``(G + r I)⁻¹ H``: the model the service predicts with while the C-stage runs."""
    return spd_solve(G + ridge * np.eye(G.shape[0]), H)


# --------------------------------------------------------------------------- E-stage


def e_stage_design(X_survived: np.ndarray, X_augmented: np.ndarray, W_survived: np.ndarray) -> np.ndarray:
    """``M = [Zˢ, Zˢ, Xᵃ]`` with ``Zˢ = Xˢ Wˢ*`` (n × (2c + dₐ))."""
    Z = np.atleast_2d(np.asarray(X_survived, dtype=np.float64)) @ W_survived
    Xa = np.atleast_2d(np.asarray(X_augmented, dtype=np.float64)).reshape(Z.shape[0], -1)
    return np.hstack([Z, Z, Xa])


@dataclass(frozen=True)
class EStageFit:
    """The E-stage's ``V`` ((2c+dₐ) × c), its weights ``w₁, w₂`` and J after every round."""

    V: np.ndarray
    w1: float
    w2: float
    objective: tuple[float, ...] = field(default=())

    @property
    def rounds(self) -> int:
        return len(self.objective)


def prop4(MM: np.ndarray, MY: np.ndarray, c: int, gamma: float, w1: float, w2: float) -> np.ndarray:
    """Prop. 4: ``V = (M'M + diag(γ/(c w₁) 1_c, γ/((c+dₐ) w₂) 1_{c+dₐ}))⁻¹ M'Y``.

    A weight of 0 makes its block's penalty infinite: that block of V is 0 and the other is solved
    alone.
    """
    k = MM.shape[0]
    penalty = np.empty(k)
    penalty[:c] = gamma / (c * w1) if w1 > 0.0 else np.inf
    penalty[c:] = gamma / ((k - c) * w2) if w2 > 0.0 else np.inf
    if w1 > 0.0 and w2 > 0.0:
        return spd_solve(MM + np.diag(penalty), MY)
    V = np.zeros((k, MY.shape[1]))
    idx = np.flatnonzero(np.isfinite(penalty))
    V[idx] = spd_solve(MM[np.ix_(idx, idx)] + np.diag(penalty[idx]), MY[idx])
    return V


def block_norms(V: np.ndarray, c: int) -> tuple[float, float]:
    """Prop. 3's ``a = ||Vˢ|| / √c`` and ``b = ||V̄|| / √(c + dₐ)`` (Frobenius norms)."""
    rest = V.shape[0] - c
    return float(np.sqrt(np.sum(V[:c] ** 2) / c)), float(np.sqrt(np.sum(V[c:] ** 2) / rest))


def e_stage_objective(
    MM: np.ndarray, MY: np.ndarray, YY: float, V: np.ndarray, c: int, gamma: float
) -> float:
    """``J = ||M V - Y||² + γ (a + b)²`` from the sums: ``tr(V'M'MV) - 2 tr(V'M'Y) + Σ||y||² + γ (a+b)²``."""
    a, b = block_norms(V, c)
    return _objective(MM, MY, YY, V, gamma, a, b)


def _objective(
    MM: np.ndarray, MY: np.ndarray, YY: float, V: np.ndarray, gamma: float, a: float, b: float
) -> float:
    return float(np.sum(V * (MM @ V)) - 2.0 * np.sum(V * MY) + YY) + gamma * (a + b) ** 2


def e_stage_fit(
    MM: np.ndarray,
    MY: np.ndarray,
    YY: float,
    c: int,
    gamma: float,
    tolerance: float = TOLERANCE,
    max_rounds: int = MAX_ROUNDS,
) -> EStageFit:
    """The E-stage alternation from the sums ``M'M``, ``M'Y`` and ``Σ ||y||²`` (see the module doc)."""
    w1 = w2 = 0.5
    history: list[float] = []
    V = np.zeros_like(MY)
    for _ in range(max_rounds):
        V = prop4(MM, MY, c, gamma, w1, w2)
        a, b = block_norms(V, c)
        if a + b > 0.0:
            w1, w2 = a / (a + b), b / (a + b)
        history.append(_objective(MM, MY, YY, V, gamma, a, b))
        if len(history) > 1 and abs(history[-1] - history[-2]) <= tolerance * max(1.0, history[-1]):
            break
    return EStageFit(V, w1, w2, tuple(history))


def e_stage_cv(
    folds: Sequence[tuple[np.ndarray, np.ndarray, float]], c: int, gammas: Sequence[float] = GAMMAS
) -> tuple[float, list[float]]:
    """γ by k-fold cross-validation from per-fold sums ``(M'M, M'Y, Σ||y||²)``: each fold is held out
    in turn, the alternation is fitted on the others (the totals minus the fold), and the held-out
    squared error ``||M V - Y||²`` is computed from the fold's sums. Returns the γ with the least
    total error (ties: the first in ``gammas``) and every total."""
    MM = sum(f[0] for f in folds)
    MY = sum(f[1] for f in folds)
    YY = sum(f[2] for f in folds)
    errors = []
    for gamma in gammas:
        total = 0.0
        for fold_MM, fold_MY, fold_YY in folds:
            V = e_stage_fit(MM - fold_MM, MY - fold_MY, YY - fold_YY, c, gamma).V
            total += float(np.sum(V * (fold_MM @ V)) - 2.0 * np.sum(V * fold_MY) + fold_YY)
        errors.append(total)
    return gammas[int(np.argmin(errors))], errors


def e_stage_fit_rows(M: np.ndarray, Y: np.ndarray, c: int, gamma: float) -> EStageFit:
    """:func:`e_stage_fit` on explicit rows (for the reproduction and the tests)."""
    Y = as_targets(Y)
    return e_stage_fit(M.T @ M, M.T @ Y, float(np.sum(Y * Y)), c, gamma)


def decide(scores: np.ndarray) -> np.ndarray:
    """Labels from scores: ``sign`` with ``sign(0) = +1`` for one column, else the argmax column index."""
    scores = as_targets(scores)
    if scores.shape[1] == 1:
        return np.where(scores[:, 0] >= 0.0, 1, -1)
    return np.argmax(scores, axis=1)
