"""Nonlinear learners: a feature map (:mod:`service.learners.feature_maps`) and a cost-sensitive
learner over the mapped vector ``z``, OGD by default, or ACOG-diag / ACOG (``update``), which is
how the maps act under ACOG (``ModelConfig.feature_map``).

- ``quadratic``: explicit pairwise products and the linear terms, ``D = d + d (d + 1) / 2``;
  only for ``d <= QUADRATIC_MAX_FEATURES`` (64: ``D = 2144``, so a full ACOG Sigma over it is
  36.8 MB and the ten members of the default ensemble 368 MB, within the 512 MB memory budget;
  OGD keeps ``D`` floats, 17 KB). Cost per label O(nnz(x)^2), plus O(D^2) for full ACOG.
- ``fogd``: random Fourier features of a Gaussian kernel, ``D = n_components`` (default 200),
  bandwidth ``bandwidth`` (default 1: the inputs are L2-normalised, so distances lie in [0, 2]),
  drawn from ``seed``. Cost per label O(D nnz(x)).
- ``nogd``: Nystrom features over a budget of ``budget`` (default 100) kept examples.
  Cost per label O(B nnz(x) + B^2), and one O(B^3) eigendecomposition when the budget fills.

``w`` (and ``weights()``) lives in the mapped space: ``D`` coordinates, then the intercept.
No schema migration: a map is defined on its input schema.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any, ClassVar

import numpy as np

from .base import Learner, loss_kind, positive, positive_int
from .covariance import DEFAULT_MEMORY_BUDGET, check_sigma_fits, memory_budget
from .errors import InvalidParameter
from .feature_maps import (
    DIAG,
    FULL,
    ORDERS,
    MapParams,
    nystrom_score,
    nystrom_update,
    quadratic_dim,
    quadratic_score,
    quadratic_update,
    rff_score,
    rff_update,
)
from .losses import Loss

QuadraticState = namedtuple("QuadraticState", ["counts", "w", "sigma", "layout"])
FOGDState = namedtuple("FOGDState", ["counts", "w", "sigma", "layout", "omega", "phase"])
NOGDState = namedtuple(
    "NOGDState", ["counts", "w", "sigma", "layout", "width", "landmarks", "sq_norms", "proj", "tally"]
)
"""``tally``: examples kept, projected (0/1)."""

QUADRATIC_MAX_FEATURES = 64
MAX_COMPONENTS = 4096
MAP_LEARNERS = {"quadratic": "quadratic", "rff": "fogd", "nystrom": "nogd"}
"""``ModelConfig.feature_map`` kind -> the learner that holds the map (its ``update`` = the learner
over ``z``)."""


def map_nbytes(algorithm: str, n_features: int, params: dict[str, Any]) -> int:
    """Bytes of the map's own arrays: FOGD's ``omega`` (``D x d``), NOGD's kept examples
    (``B x d``) and projection (``B x B``); the quadratic map keeps none."""
    if algorithm == "fogd":
        return 8 * mapped_dimension(algorithm, n_features, params) * (n_features + 1)
    if algorithm == "nogd":
        b = mapped_dimension(algorithm, n_features, params)
        return 8 * b * (n_features + b + 1)
    return 0


def check_map_fits(algorithm: str, n_features: int, params: dict[str, Any], copies: int = 1) -> None:
    """Raise :class:`InvalidParameter` (``n_features``) when ``copies`` maps exceed the memory budget."""
    need = copies * map_nbytes(algorithm, n_features, params)
    budget = params.get("memory_budget", DEFAULT_MEMORY_BUDGET)
    if need > budget:
        raise InvalidParameter(
            "n_features",
            f"{algorithm} keeps {need / 2**20:.1f} MiB of map arrays for {n_features} features"
            + (f" ({copies} copies)" if copies > 1 else "")
            + f", over the memory budget of {budget / 2**20:.1f} MiB: fewer components, or quadratic",
        )


def mapped_dimension(algorithm: str, n_features: int, params: dict[str, Any]) -> int:
    """``D``, the mapped coordinates of ``algorithm`` (``quadratic``, ``fogd``, ``nogd``) without
    the intercept, before any learner is made: what a memory check reads."""
    if algorithm == "quadratic":
        return quadratic_dim(n_features)
    if algorithm == "fogd":
        return int(params.get("n_components", FOGD.own_params["n_components"][0]))
    if algorithm == "nogd":
        return int(params.get("budget", NOGD.own_params["budget"][0]))
    raise ValueError(f"{algorithm!r} has no feature map")


def update_kind(value: Any) -> str:
    if value not in ORDERS:
        raise InvalidParameter("update", f"must be one of {', '.join(map(repr, ORDERS))}, got {value!r}")
    return str(value)


def bounded_int(name: str, top: int) -> Any:
    def check(value: Any) -> int:
        n = positive_int(name)(value)
        if n > top:
            raise InvalidParameter(name, f"must be <= {top}, got {value!r}")
        return n

    return check


def seed_value(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < 2**63:
        raise InvalidParameter("seed", f"must be an integer in [0, 2^63), got {value!r}")
    return int(value)


MAPPED_PARAMS: dict[str, Any] = {
    "eta": (1.0, positive("eta")),
    "gamma": (1.0, positive("gamma")),
    "loss": ("II", loss_kind),
    "update": ("ogd", update_kind),
    "memory_budget": (DEFAULT_MEMORY_BUDGET, memory_budget),
}


class _Mapped(Learner):
    """A feature map and the learner over ``z``; see the module docstring."""

    params_type = MapParams

    @property
    def n_map(self) -> int:
        """Mapped coordinates, without the intercept."""
        raise NotImplementedError

    @property
    def n_out(self) -> int:
        """Length of ``w``: the mapped coordinates and the intercept."""
        return self.n_map + (1 if self.params["fit_intercept"] else 0)

    def _check_params(self) -> None:
        check_map_fits(self.algorithm, self.n_features, self.params)
        if self.params["update"] == "acog":
            check_sigma_fits(f"{self.algorithm} (update acog)", self.n_out, self.params["memory_budget"])

    def kernel_params(self) -> MapParams:
        p = self.params
        return MapParams(float(p["eta"]), float(p["gamma"]), int(Loss[p["loss"]]), ORDERS[p["update"]])

    def _learner_arrays(self) -> dict[str, np.ndarray]:
        order, n = ORDERS[self.params["update"]], self.n_out
        if order == FULL:
            sigma = np.eye(n)
        elif order == DIAG:
            sigma = np.ones((1, n))
        else:
            sigma = np.zeros((0, 0))
        layout = np.array([self.n_features, self.n_map], dtype=np.int64)
        return {"w": np.zeros(n), "sigma": sigma, "layout": layout}

    def describe(self) -> dict[str, Any]:
        """Adds ``"feature_map"``: the map, its dimension and the learner over it."""
        facts = {"kind": self.algorithm, "dimension": self.n_map, "update": self.params["update"]}
        return {**super().describe(), "feature_map": facts}


class Quadratic(_Mapped):
    """Explicit degree-2 features (linear terms and pairwise products) and OGD / ACOG over them."""

    algorithm = "quadratic"
    own_params: ClassVar = dict(MAPPED_PARAMS)
    state_type = QuadraticState
    kernels = (quadratic_score, quadratic_update)

    @property
    def n_map(self) -> int:
        return quadratic_dim(self.n_features)

    def _check_params(self) -> None:
        if self.n_features > QUADRATIC_MAX_FEATURES:
            raise InvalidParameter(
                "n_features",
                f"quadratic expands d features into d + d(d+1)/2 and takes d <= {QUADRATIC_MAX_FEATURES}, "
                f"got {self.n_features}: use fogd or nogd",
            )
        super()._check_params()

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return self._learner_arrays()

    def live_layout(self) -> np.ndarray:
        """``[d, D]``, the array the kernels read (what :func:`quadratic_scores` takes with
        :meth:`live_weights`, for the ensemble's one-call vote). Never write to it."""
        return self._arrays["layout"]


class FOGD(_Mapped):
    """Fourier online gradient descent: random Fourier features of a Gaussian kernel."""

    algorithm = "fogd"
    own_params: ClassVar = {
        **MAPPED_PARAMS,
        "n_components": (200, bounded_int("n_components", MAX_COMPONENTS)),
        "bandwidth": (1.0, positive("bandwidth")),
        "seed": (0, seed_value),
    }
    state_type = FOGDState
    kernels = (rff_score, rff_update)

    @property
    def n_map(self) -> int:
        return int(self.params["n_components"])

    def _init_arrays(self) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(self.params["seed"])
        omega = rng.normal(0.0, 1.0 / self.params["bandwidth"], size=(self.n_map, self.n_features))
        phase = rng.uniform(0.0, 2.0 * math.pi, size=self.n_map)
        return {**self._learner_arrays(), "omega": omega, "phase": phase}


class NOGD(_Mapped):
    """Nystrom online gradient descent over a budget of kept examples (kernel OGD until full)."""

    algorithm = "nogd"
    own_params: ClassVar = {
        **MAPPED_PARAMS,
        "budget": (100, bounded_int("budget", MAX_COMPONENTS)),
        "bandwidth": (1.0, positive("bandwidth")),
    }
    state_type = NOGDState
    kernels = (nystrom_score, nystrom_update)

    @property
    def n_map(self) -> int:
        return int(self.params["budget"])

    def _init_arrays(self) -> dict[str, np.ndarray]:
        b = self.n_map
        return {
            **self._learner_arrays(),
            "width": np.array([float(self.params["bandwidth"])]),
            "landmarks": np.zeros((b, self.n_features)),
            "sq_norms": np.zeros(b),
            "proj": np.zeros((b, b)),
            "tally": np.zeros(2, dtype=np.int64),
        }

    def describe(self) -> dict[str, Any]:
        tally = self._arrays["tally"]
        facts = {"kept": int(tally[0]), "projected": bool(tally[1])}
        out = super().describe()
        out["feature_map"].update(facts)
        return out
