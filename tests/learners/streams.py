"""Random streams and per-algorithm parameters shared by the learner tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from service.learners import ALGORITHMS, EtaGrid, OnlineLearner, create
from service.model_config import ModelConfig

NAMES = sorted(ALGORITHMS)

ENSEMBLE_FORMS: dict[str, dict[str, Any]] = {
    "eta=auto": {"eta": "auto", "eta_grid": [0.3, 3.0, 30.0]},
    "loss=auto": {"loss": "auto"},
    "eta=auto,loss=auto": {"eta": "auto", "loss": "auto", "eta_grid": [0.3, 3.0, 30.0]},
    "members=all": {"eta": "auto", "loss": "auto", "eta_grid": [0.3, 3.0], "members": "all"},
    "members=auto,inputs=l2+standard": {
        "eta": "auto",
        "loss": "auto",
        "eta_grid": [0.3, 3.0],
        "members": "auto",
        "inputs": ["l2", "standard"],
    },
}
"""The forms of the default learner (:class:`service.learners.EtaGrid`), beside each algorithm
they apply to: over one family, over the quadratic family too (``members="all"``), and the
defaults' form (every family the rule allows at this ``d``, the forest included once registered,
under per-example L2 and online standardisation); the grid is shortened from the default five
rates to keep the suite cheap."""


@dataclass(frozen=True)
class Case:
    """One learner the conformance suite runs: an algorithm, possibly as an ensemble form."""

    algorithm: str
    form: str | None = None
    ensemble: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def id(self) -> str:
        return self.algorithm if self.form is None else f"{self.algorithm}[{self.form}]"

    def params(self, **overrides: Any) -> dict[str, Any]:
        return {**params_for(self.algorithm), **self.ensemble, **overrides}

    def create(self, n_features: int, **overrides: Any) -> OnlineLearner:
        return create(self.algorithm, n_features=n_features, **self.params(**overrides))


CASES = [Case(name) for name in NAMES] + [
    Case(name, form, params)
    for name in NAMES
    for form, params in ENSEMBLE_FORMS.items()
    if all(key in ALGORITHMS[name].param_spec() for key in ("eta", "loss"))
]
"""Every registered algorithm, then every ensemble form of each algorithm that has a learning
rate and a loss."""


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
    if "rho_tolerance" in spec:  # opid: rebuild its inverse often (the rebuild branch)
        chosen["rho_tolerance"] = 0.01
    if "batch_size" in spec:  # sdrogd, pegasos: several steps (and sketch shrinks) per stream
        chosen["batch_size"] = 7
    if "sketch_fraction" in spec:
        chosen.update(sketch_fraction=0.3, lda_weight=0.8, lam=0.1)
    if "update" in spec:  # the nonlinear learners: each takes a different learner over z
        chosen["update"] = {"quadratic": "ogd", "fogd": "acog-diag", "nogd": "acog"}[name]
    if "n_components" in spec:
        chosen["n_components"] = 64
    if "budget" in spec:  # nogd: the budget fills (and the map projects) mid-stream
        chosen.update(budget=12, bandwidth=0.7)
    if "max_nodes" in spec:  # amf: the budget fills mid-stream, both split rules, a seed of its own
        chosen.update(max_nodes=101, step=0.8, dirichlet=0.4, split_pure=True, seed=7)
    if "weighting" in spec:  # knn: the plain vote, its prior (test_knn.py wraps small windows)
        chosen.update(k=7, window=1200, weighting="uniform", dirichlet=0.7)
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


def same_state(a: Any, b: Any) -> bool:
    """Whether two ``to_state()`` trees hold the same keys, dtypes and bits (NaN equal to NaN)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        b = np.asarray(b)
        nan = a.dtype.kind == "f"
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=nan))
    return bool(a == b)


def arrays_of(state: Any) -> list[np.ndarray]:
    """Every array of a ``to_state()`` tree."""
    if isinstance(state, dict):
        return [arr for value in state.values() for arr in arrays_of(value)]
    return [state] if isinstance(state, np.ndarray) else []


DEFAULT_ROSTERS: dict[str, dict[str, Any]] = {
    # d = 6: linear and quadratic over L2 and standardised input, the forest, the nearest neighbours
    "every family": {"n_features": 6},
    # nine rates and both losses: 18 linear members over one input, two calls (16 and 2)
    "more than one call": {"n_features": 80, "eta_grid": [0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000]},
    # above d = 64: ten linear members over the L2 form alone, voted in one compiled call (l2_vote)
    "wide, one call": {"n_features": 80},
    "cost": {"n_features": 12, "objective": "cost"},
    "no intercept": {"n_features": 9, "fit_intercept": False},
}
"""Default models (``ModelConfig``) whose ensembles differ in how their members are called."""


def default_roster(name: str) -> EtaGrid:
    """The default learner of :data:`DEFAULT_ROSTERS` ``name``."""
    learner = ModelConfig(**DEFAULT_ROSTERS[name]).build_learner()
    assert isinstance(learner, EtaGrid)
    return learner
