"""Readable reference of the nonlinear learners (:mod:`service.learners.nonlinear`): the maps of
:mod:`service.learners.feature_maps` and the learner over ``z``, in dense numpy, one pure step
``(model, x, y, params, rho) -> model'`` each. ``x`` carries the intercept as its last entry when
the learner has one (``n_in`` is the input dimension without it). Not used by the service.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Model = dict[str, Any]
KINDS = {"quadratic": "quadratic", "fogd": "rff", "nogd": "nystrom"}


def initial_model(algorithm: str, d: int, p: dict[str, Any]) -> Model:
    """``d`` counts the intercept column when ``p["fit_intercept"]``."""
    n_in = d - (1 if p.get("fit_intercept") else 0)
    kind = KINDS[algorithm]
    if kind == "quadratic":
        n_map = n_in + n_in * (n_in + 1) // 2
    elif kind == "rff":
        n_map = int(p.get("n_components", 200))
    else:
        n_map = int(p.get("budget", 100))
    n = n_map + (d - n_in)
    m: Model = {"kind": kind, "n_in": n_in, "n_map": n_map, "w": np.zeros(n)}
    update = p.get("update", "ogd")
    m["update"] = update
    m["Sigma"] = np.eye(n) if update == "acog" else None
    m["s"] = np.ones(n) if update == "acog-diag" else None
    width = float(p.get("bandwidth", 1.0))
    m["width"] = width
    if kind == "rff":
        rng = np.random.default_rng(p.get("seed", 0))
        m["omega"] = rng.normal(0.0, 1.0 / width, size=(n_map, n_in))
        m["phase"] = rng.uniform(0.0, 2.0 * math.pi, size=n_map)
    if kind == "nystrom":
        m.update(landmarks=np.zeros((0, n_in)), proj=None)
    return m


def _kernel(a: np.ndarray, b: np.ndarray, width: float) -> np.ndarray:
    """``k(a_i, b_j) = exp(-||a_i - b_j||^2 / (2 width^2))``."""
    sq = np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=2)
    return np.asarray(np.exp(-sq / (2.0 * width * width)))


def feature_map(m: Model, x: np.ndarray) -> np.ndarray:
    """``z = [phi(x without the intercept), intercept]``."""
    xs, tail = x[: m["n_in"]], x[m["n_in"] :]
    if m["kind"] == "quadratic":
        i, j = np.triu_indices(m["n_in"])
        z = np.concatenate([xs, xs[i] * xs[j] * np.where(i == j, 1.0, math.sqrt(2.0))])
    elif m["kind"] == "rff":
        z = math.sqrt(2.0 / m["n_map"]) * np.cos(m["omega"] @ xs + m["phase"])
    else:
        kv = np.zeros(m["n_map"])
        kept = m["landmarks"].shape[0]
        kv[:kept] = _kernel(xs[None, :], m["landmarks"], m["width"])[0]
        z = kv if m["proj"] is None else m["proj"] @ kv
    return np.concatenate([z, tail])


def _project(m: Model) -> Model:
    """``K = U Lambda U'``; ``P = Lambda^{-1/2} U'``; ``w <- Lambda^{1/2} U' w``; Sigma back to I."""
    b = m["n_map"]
    lam, U = np.linalg.eigh(_kernel(m["landmarks"], m["landmarks"], m["width"]))
    keep = lam > 1e-10 * lam.max()
    root = np.where(keep, np.sqrt(np.where(keep, lam, 1.0)), 0.0)
    inv = np.where(keep, 1.0 / np.where(keep, root, 1.0), 0.0)
    w = m["w"].copy()
    w[:b] = root * (U.T @ m["w"][:b])
    out = {**m, "proj": inv[:, None] * U.T, "w": w}
    if m["Sigma"] is not None:
        out["Sigma"] = np.eye(m["Sigma"].shape[0])
    if m["s"] is not None:
        out["s"] = np.ones(m["s"].shape[0])
    return out


def step(m: Model, x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> Model:
    z = feature_map(m, x)
    score = float(m["w"] @ z)
    rho_y = rho if y == 1 else 1.0
    if p.get("loss", "II") == "I":
        loss, c = max(0.0, rho_y - y * score), 1.0
    else:
        loss, c = rho_y * max(0.0, 1.0 - y * score), rho_y
    if loss <= 0.0:
        return m
    eta, gamma = float(p.get("eta", 1.0)), float(p.get("gamma", 1.0))
    g = -c * y * z
    if m["kind"] == "nystrom" and m["proj"] is None:  # kernel OGD while the budget fills
        k = m["landmarks"].shape[0]
        w = m["w"].copy()
        w[k] = eta * c * y
        w[m["n_map"] :] -= eta * g[m["n_map"] :]
        out = {**m, "w": w, "landmarks": np.vstack([m["landmarks"], x[: m["n_in"]]])}
        return _project(out) if k + 1 == m["n_map"] else out
    if m["update"] == "ogd":
        return {**m, "w": m["w"] - eta * g}
    if m["update"] == "acog-diag":
        s = 1.0 / (1.0 / m["s"] + z * z / gamma)
        return {**m, "s": s, "w": m["w"] - eta * s * g}
    u = m["Sigma"] @ z
    sigma = m["Sigma"] - np.outer(u, u) / (gamma + z @ u)
    return {**m, "Sigma": sigma, "w": m["w"] - eta * sigma @ g}


def score(m: Model, x: np.ndarray) -> float:
    return float(m["w"] @ feature_map(m, x))
