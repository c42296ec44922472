"""Random streams and per-algorithm parameters shared by the learner tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from service.learners import ALGORITHMS

NAMES = sorted(ALGORITHMS)


def params_for(name: str, **overrides: Any) -> dict[str, Any]:
    """Non-default hyper-parameters that exercise every code path of ``name``."""
    spec = ALGORITHMS[name].param_spec()
    chosen: dict[str, Any] = {}
    if "rho" in spec:
        chosen["rho"] = "laplace"
    if "eta" in spec:
        chosen["eta"] = 0.8
    if "loss" in spec:
        chosen["loss"] = "I"
    if "sketch_size" in spec:
        chosen["sketch_size"] = 3
    if "remat_every" in spec:
        chosen["remat_every"] = 50
    if "C" in spec:
        chosen["C"] = 0.5
    if "r" in spec:
        chosen["r"] = 0.3
    chosen.update(overrides)
    return chosen


def sparse_stream(n: int, d: int, density: float, seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows with a few non-zeros, unit L2 norm, labels from a noisy linear rule (~30% positive)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    X.data = rng.normal(size=X.data.shape)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ X
    truth = rng.normal(size=d)
    y = np.where(X @ truth + 0.3 * rng.normal(size=n) > 0.4, 1, -1)
    return sp.csr_matrix(X), y
