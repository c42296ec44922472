"""Readable reference implementations: the specification, transcribed into dense numpy.

Each function below is one round of an algorithm exactly as ``docs/learners.md``
writes it, on dense vectors, with no attention to speed. The fast numba kernels are tested
against these (``tests/learners/test_maths.py``,
``test_fast_kernels_agree_with_the_readable_reference``); when the two disagree, this file is
the one to believe. It is not used by the service.

Every step has the shape of an update in the learner contract (:mod:`service.learners.base`):
a pure function ``(state, x, y, params, rho) -> state'`` that returns a new state dict and
leaves its arguments alone. The kernels compute the same ``state'`` in place.

``run(algorithm, X, y, **params)`` replays a stream (predict, then learn) and returns the
scores ``mu . x`` made before each update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import forest as forest_reference
from . import nonlinear as nonlinear_reference
from . import sdrogd as sdrogd_reference

Model = dict[str, Any]
"""A state: ``w`` and the algorithm's other arrays, by name."""


def _rho(p: dict[str, Any], t_p: int, t_n: int) -> float:
    if p.get("rho") == "laplace":
        a = p.get("alpha_p", 0.5)
        return float(a * (t_n + 1) / ((1 - a) * (t_p + 1)))
    return float(p.get("rho", 1.0))


def _loss_and_grad(
    p: dict[str, Any], x: np.ndarray, y: int, s: float, rho: float
) -> tuple[float, np.ndarray]:
    rho_y = rho if y == 1 else 1.0
    if p.get("loss", "II") == "I":
        return max(0.0, rho_y - y * s), -y * x
    return rho_y * max(0.0, 1.0 - y * s), -rho_y * y * x


def _sign(s: float) -> int:
    return 1 if s >= 0 else -1


def perceptron(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    if _sign(m["w"] @ x) != y:
        return {**m, "w": m["w"] + y * x}
    return m


def pa1(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    loss = max(0.0, 1 - y * (m["w"] @ x))
    if loss > 0 and x @ x > 0:
        tau = min(p.get("C", 1.0), loss / (x @ x))
        return {**m, "w": m["w"] + tau * y * x}
    return m


def paum(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    tau_y = rho if y == 1 else 1.0
    if y * (m["w"] @ x) <= tau_y:
        return {**m, "w": m["w"] + y * x}
    return m


def cpapb(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    s = m["w"] @ x
    if _sign(s) != y and x @ x > 0:
        cost_y = rho if y == 1 else 1.0
        loss = np.sqrt(cost_y) - y * s
        return {**m, "w": m["w"] + loss / (x @ x) * y * x}
    return m


def romma(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    w = m["w"]
    if _sign(w @ x) == y or x @ x == 0:
        return m
    W, X, pp = w @ w, x @ x, w @ x
    if W == 0:
        return {**m, "w": y * x / X}
    den = X * W - pp**2
    if den > 0:
        c = (X * W - y * pp) / den
        d = W * (y - pp) / den
        return {**m, "w": c * w + d * x}
    return m


def arow(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    mu, Sigma = m["w"], m["Sigma"]
    loss = max(0.0, 1 - y * (mu @ x))
    if loss > 0:
        v = x @ Sigma @ x
        beta = 1 / (v + p.get("r", 1.0))
        alpha = loss * beta
        u = Sigma @ x
        return {**m, "w": mu + alpha * y * u, "Sigma": Sigma - beta * np.outer(u, u)}
    return m


def cog(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    loss, g = _loss_and_grad(p, x, y, m["w"] @ x, rho)
    if loss > 0:
        return {**m, "w": m["w"] - p.get("eta", 1.0) * g}
    return m


def acog(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    loss, g = _loss_and_grad(p, x, y, m["w"] @ x, rho)
    if loss > 0:
        Sigma, gamma = m["Sigma"], p.get("gamma", 1.0)
        Sigma = Sigma - np.outer(Sigma @ x, Sigma @ x) / (gamma + x @ Sigma @ x)
        return {**m, "Sigma": Sigma, "w": m["w"] - p.get("eta", 1.0) * Sigma @ g}
    return m


def acog_diag(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    loss, g = _loss_and_grad(p, x, y, m["w"] @ x, rho)
    if loss > 0:
        s = 1 / (1 / m["s"] + x**2 / p.get("gamma", 1.0))
        return {**m, "s": s, "w": m["w"] - p.get("eta", 1.0) * (s * g)}
    return m


def _orth_rows(V: np.ndarray, inner: Callable[[np.ndarray, np.ndarray], float]) -> np.ndarray:
    """Classical Gram-Schmidt, applied twice, rows in order; a vanishing row is dropped (zeroed)."""
    Q = np.zeros_like(V)
    for i, f in enumerate(V):
        beta = f.copy()
        for _ in range(2):
            alpha = np.array([inner(q, beta) for q in Q[:i]])
            beta = beta - (alpha @ Q[:i] if i else 0.0)
        c = np.sqrt(inner(beta, beta))
        Q[i] = beta / c if c > 0 else 0.0
    return Q


def sacog(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    loss, g = _loss_and_grad(p, x, y, m["w"] @ x, rho)
    xh = x / np.sqrt(p.get("gamma", 1.0))
    t = m["t"] + 1
    step = 1 / t
    pv = m["V"] @ xh
    Lam = (1 - step) * m["Lam"] + step * pv**2
    V = _orth_rows(m["V"] + step * np.outer(pv, xh), lambda a, b: float(a @ b))
    w = m["w"]
    if loss > 0:
        coef = t * Lam / (1 + t * Lam)
        w = w - p.get("eta", 1.0) * (g - V.T @ (coef * (V @ g)))
    return {**m, "t": t, "Lam": Lam, "V": V, "w": w}


def opid(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    """OPID's phase C (:mod:`service.learners.opid`): ridge least squares on the running sums,
    ``w = (G(rho_u) + r I)^-1 H(rho_u)`` with ``G(rho) = G + (rho - 1) G_+``, where ``rho_u`` follows
    the current rho once it has moved by more than ``rho_tolerance`` (relative)."""
    xx = np.outer(x, x)
    pos = 1.0 if y == 1 else 0.0
    G, Gp = m["G"] + xx, m["Gp"] + pos * xx
    H, Hp = m["H"] + y * x, m["Hp"] + pos * y * x
    rho_u = m["rho_u"]
    if abs(rho - rho_u) > p.get("rho_tolerance", 0.05) * rho_u:
        rho_u = rho
    A = G + (rho_u - 1.0) * Gp + p.get("ridge", 1.0) * np.eye(x.size)
    w = np.linalg.solve(A, H + (rho_u - 1.0) * Hp)
    return {**m, "G": G, "Gp": Gp, "H": H, "Hp": Hp, "rho_u": rho_u, "w": w}


STEPS: dict[str, Callable[[Model, np.ndarray, int, dict[str, Any], float], Model]] = {
    "perceptron": perceptron,
    "pa1": pa1,
    "paum": paum,
    "cpapb": cpapb,
    "romma": romma,
    "arow": arow,
    "cog": cog,
    "acog": acog,
    "acog-diag": acog_diag,
    "sacog": sacog,
    "ssacog": sacog,  # the same model in exact arithmetic
    "opid": opid,  # phase C; the change and phase E: service/learners/opid/reference.py
    # docs/learners.md §8, transcribed in research.reference.sdrogd
    "sdrogd": sdrogd_reference.pure(sdrogd_reference.sdrogd),
    "pegasos": sdrogd_reference.pure(sdrogd_reference.pegasos),
    # the nonlinear members: a feature map and OGD / ACOG over it, in research.reference.nonlinear
    **dict.fromkeys(nonlinear_reference.KINDS, nonlinear_reference.step),
    "amf": forest_reference.step,  # the Aggregated Mondrian Forest, research.reference.forest
}


def initial_model(algorithm: str, d: int, p: dict[str, Any]) -> Model:
    if algorithm in ("sdrogd", "pegasos"):
        return sdrogd_reference.initial_state(algorithm, d, p)
    if algorithm in nonlinear_reference.KINDS:
        return nonlinear_reference.initial_model(algorithm, d, p)
    if algorithm == "amf":
        return forest_reference.initial_model(d, p)
    m: Model = {"w": np.zeros(d)}
    if algorithm in ("acog", "arow"):
        m["Sigma"] = np.eye(d)
    if algorithm == "acog-diag":
        m["s"] = np.ones(d)
    if algorithm in ("sacog", "ssacog"):
        k = p.get("sketch_size", 5)
        m.update(V=np.eye(k, d), Lam=np.zeros(k), t=0)
    if algorithm == "opid":
        m.update(G=np.zeros((d, d)), Gp=np.zeros((d, d)), H=np.zeros(d), Hp=np.zeros(d), rho_u=_rho(p, 0, 0))
    return m


def run(algorithm: str, X: np.ndarray, y: np.ndarray, **params: Any) -> np.ndarray:
    """Scores ``mu . x_t`` made before each round's update, over the rows of dense ``X``."""
    X = np.asarray(X, dtype=np.float64)
    if params.get("fit_intercept"):
        X = np.hstack([X, np.full((X.shape[0], 1), params.get("intercept_value", 1.0))])
    model = initial_model(algorithm, X.shape[1], params)
    scores = np.empty(X.shape[0])
    t_p = t_n = 0
    for i, (x, label) in enumerate(zip(X, y, strict=True)):
        if algorithm == "amf":  # the decision's log-odds carries rho
            scores[i] = forest_reference.score(model, x, params, _rho(params, t_p, t_n))
        elif algorithm in nonlinear_reference.KINDS:
            scores[i] = nonlinear_reference.score(model, x)
        else:
            scores[i] = model["w"] @ x
        model = STEPS[algorithm](model, x, int(label), params, _rho(params, t_p, t_n))
        t_p, t_n = t_p + (label == 1), t_n + (label != 1)
    return scores
