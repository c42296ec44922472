"""Readable reference of SDROGD and Pegasos: ``docs/learners.md`` §8 in dense numpy.

State in, state out, one labelled example at a time, no attention to speed; the numba kernels of
:mod:`service.learners.sdrogd` are tested against it (``tests/learners/test_sdrogd.py``). When the
two disagree, this file is the one to believe. It is not used by the service.

**Frequent Directions** (Liberty 2013), the sketch ``B`` (``2l x d``, ``filled`` rows in use)::

    insert(x): if x == 0: return                          # [decision]
        B[filled] = x; filled += 1
        if filled == 2l: shrink()
    shrink(): U, sigma, V = svd(B)                        # sigma in decreasing order
        xi2 = sigma[l]^2 if rank(B) > l else 0            # the (l+1)-th largest
        sigma_hat = sqrt(max(sigma^2 - xi2, 0)); sigma_hat[l:] = 0
        B = diag(sigma_hat) V; filled = #(sigma_hat > 0)

so that ``0 <= X'X - B'B`` and ``||X'X - B'B||_2 <= (||X||_F^2 - ||B||_F^2) / (l + 1)`` after every
insert (``X`` the rows inserted so far).

**SDROGD**, per labelled example ``(x, y)`` with ``w`` fixed inside a batch of ``n``::

    if loss I:  if rho_y - y w.x > 0: g += y x           # rho_y = rho for y = +1, 1 for y = -1
    if loss II: if 1 - y w.x > 0:     g += rho_y y x      # rho = 1: the paper's hinge
    k += 1; N_y += 1; s += x; s_y += x; insert(x)
    if k == n: step()
    step(): t += 1; N = N_+ + N_-; u = s / N
        v_c = sqrt(N_c / N) (s_c / N_c - u)  (0 when N_c = 0)
        z = eta B'(B w) / N - eta' u (u'w) - sum_c v_c (v_c'w)   # = R_hat w, eq. (17)
        w <- w - (1/t) (lam w + z - g / k); g = 0; k = 0

with ``eta' = eta`` (``eq17="expanded"``, from eq. (11)) or ``1`` (``eq17="printed"``) and ``B`` all
``2l`` rows (``sketch_rows="all"``) or the top ``l`` (``"upper"``, the paper's ``C``). A step that
would make ``w`` non-finite is refused: ``w`` and ``t`` stay, the batch is cleared, ``refused += 1``.

**Pegasos** (Shalev-Shwartz et al. 2011), the same batches without the scatter term and with
``alpha_t = 1 / (lam t)``: ``w <- w - (1 / (lam t)) (lam w - g / k)``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

Svd = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def numpy_svd(B: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``U, sigma, V`` with ``B = U diag(sigma) V`` and ``sigma`` decreasing (numpy's thin SVD)."""
    U, sigma, V = np.linalg.svd(B, full_matrices=False)
    return U, sigma, V


def sketch_rows(ell: int) -> int:
    """Rows of the sketch buffer: ``2l``."""
    return 2 * ell


def numerical_rank(sigma: np.ndarray, shape: tuple[int, int]) -> int:
    """``#(sigma > sigma_max * max(shape) * eps)``: numpy's ``matrix_rank`` tolerance."""
    if sigma.size == 0 or sigma[0] == 0.0:
        return 0
    tol = sigma[0] * max(shape) * np.finfo(np.float64).eps
    return int(np.sum(sigma > tol))


def fd_shrink(B: np.ndarray, ell: int, svd: Svd = numpy_svd) -> tuple[np.ndarray, int]:
    """One Frequent Directions shrink of the full buffer: ``(new B, filled)``."""
    _, sigma, V = svd(B)
    xi = sigma[ell] if numerical_rank(sigma, B.shape) > ell else 0.0
    sigma_hat = np.sqrt(np.maximum((sigma - xi) * (sigma + xi), 0.0))  # sigma^2 - xi^2
    sigma_hat[ell:] = 0.0
    out = np.zeros_like(B)
    out[: V.shape[0]] = sigma_hat[:, None] * V
    return out, int(np.sum(sigma_hat > 0.0))


def fd_insert(m: dict[str, Any], x: np.ndarray, ell: int, svd: Svd = numpy_svd) -> None:
    """Insert row ``x`` into the sketch ``m["B"]`` (``m["filled"]`` rows in use); shrink when full."""
    if not np.any(x):
        return
    m["B"][m["filled"]] = x
    m["filled"] += 1
    if m["filled"] == 2 * ell:
        m["B"], m["filled"] = fd_shrink(m["B"], ell, svd)


def sketch_size(d: int, fraction: float) -> int:
    """``l = ceil(f d)``, at least 1 [decision: round up]."""
    return max(1, math.ceil(fraction * d))


def initial_model(d: int, ell: int = 1) -> dict[str, Any]:
    """Every array and counter of §1's state at zero."""
    return {
        "w": np.zeros(d),
        "B": np.zeros((2 * ell, d)),
        "filled": 0,
        "s": np.zeros(d),
        "s_c": {1: np.zeros(d), -1: np.zeros(d)},
        "N_c": {1: 0, -1: 0},
        "g": np.zeros(d),
        "k": 0,
        "t": 0,
        "refused": 0,
    }


def _hinge_part(m: dict[str, Any], x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> None:
    rho_y = rho if y == 1 else 1.0
    margin = y * (m["w"] @ x)
    if p.get("loss", "II") == "I":
        if rho_y - margin > 0:
            m["g"] = m["g"] + y * x
    elif 1.0 - margin > 0:
        m["g"] = m["g"] + rho_y * y * x


def scatter_times(m: dict[str, Any], w: np.ndarray, p: dict[str, Any], ell: int) -> np.ndarray:
    """``z = R_hat w`` by eq. (17), never forming a ``d x d`` matrix."""
    eta = p.get("lda_weight", 0.3)
    N = m["N_c"][1] + m["N_c"][-1]
    u = m["s"] / N
    B = m["B"][:ell] if p.get("sketch_rows", "all") == "upper" else m["B"]
    mean_weight = 1.0 if p.get("eq17", "expanded") == "printed" else eta
    z = eta * (B.T @ (B @ w)) / N - mean_weight * u * (u @ w)
    for c in (-1, 1):
        if m["N_c"][c] > 0:
            v = math.sqrt(m["N_c"][c] / N) * (m["s_c"][c] / m["N_c"][c] - u)
            z = z - v * (v @ w)
    return z


def sdrogd(m: dict[str, Any], x: np.ndarray, y: int, p: dict[str, Any], rho: float = 1.0,
           svd: Svd = numpy_svd) -> None:  # fmt: skip
    """One labelled example of SDROGD (mutates the model dict ``m``)."""
    ell = sketch_size(m["w"].shape[0], p.get("sketch_fraction", 0.1))
    _hinge_part(m, x, y, p, rho)
    m["k"] += 1
    m["N_c"][y] += 1
    m["s"] = m["s"] + x
    m["s_c"][y] = m["s_c"][y] + x
    fd_insert(m, x, ell, svd)
    if m["k"] == p.get("batch_size", 60):
        t = m["t"] + 1
        w = m["w"]
        z = scatter_times(m, w, p, ell)
        new = w - (1.0 / t) * (p.get("lam", 0.0) * w + z - m["g"] / m["k"])
        _finish_step(m, new, t)


def pegasos(m: dict[str, Any], x: np.ndarray, y: int, p: dict[str, Any], rho: float = 1.0) -> None:
    """One labelled example of mini-batch Pegasos with ``alpha_t = 1 / (lam t)``."""
    _hinge_part(m, x, y, p, rho)
    m["k"] += 1
    if m["k"] == p.get("batch_size", 60):
        t = m["t"] + 1
        lam = p.get("lam", 1.0)
        w = m["w"]
        new = w - (1.0 / (lam * t)) * (lam * w - m["g"] / m["k"])
        _finish_step(m, new, t)


def _finish_step(m: dict[str, Any], new: np.ndarray, t: int) -> None:
    if np.all(np.isfinite(new)):
        m["w"], m["t"] = new, t
    else:
        m["refused"] += 1
    m["g"] = np.zeros_like(m["g"])
    m["k"] = 0


Step = Callable[[dict[str, Any], np.ndarray, int, dict[str, Any], float], dict[str, Any]]


def pure(step: Callable[..., None]) -> Step:
    """``step`` in the contract's shape ``(state, x, y, params, rho) -> state'`` (a copy; the
    argument is left alone), as :data:`research.reference.steps.STEPS` holds every algorithm."""

    def apply(m: dict[str, Any], x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> dict[str, Any]:
        out = copy.deepcopy(m)
        step(out, x, y, p, rho)
        return out

    return apply


def initial_state(algorithm: str, d: int, p: dict[str, Any]) -> dict[str, Any]:
    """:func:`initial_model` with ``l`` from ``p`` (Pegasos ignores the sketch)."""
    return initial_model(d, sketch_size(d, p.get("sketch_fraction", 0.1)) if algorithm == "sdrogd" else 1)


def run(algorithm: str, X: np.ndarray, y: np.ndarray, svd: Svd = numpy_svd, **params: Any) -> dict[str, Any]:
    """Replay the rows of dense ``X`` (``fit_intercept`` appends a constant 1); the final model.

    ``params["rho"]`` is a fixed bias (default 1, the paper); ``m["scores"]`` holds ``w . x``
    before each example and ``m["steps"]`` the weights after each step.
    """
    X = np.asarray(X, dtype=np.float64)
    if params.get("fit_intercept"):
        X = np.hstack([X, np.full((X.shape[0], 1), params.get("intercept_value", 1.0))])
    d = X.shape[1]
    ell = sketch_size(d, params.get("sketch_fraction", 0.1))
    m = initial_model(d, ell)
    m["scores"], m["steps"] = [], []
    rho = float(params.get("rho", 1.0))
    for x, label in zip(X, y, strict=True):
        m["scores"].append(float(m["w"] @ x))
        t_before = m["t"] + m["refused"]
        if algorithm == "sdrogd":
            sdrogd(m, x, int(label), params, rho, svd)
        else:
            pegasos(m, x, int(label), params, rho)
        if m["t"] + m["refused"] > t_before:
            m["steps"].append(m["w"].copy())
    return m
