"""The contract every learner follows, and the parts they all share.

A learner is a small in-memory object (river's ``learn_one``/``predict_one`` shape) whose
state is a fixed set of numpy arrays (LIBOL's ``model`` struct):

>>> from service.learners import create
>>> learner = create("acog", n_features=3, loss="II", eta=1.0, rho=2.0)
>>> learner.learn(np.array([1.0, 0.0, 0.0]), +1).updated
True
>>> learner.score(np.array([1.0, 0.0, 0.0])) > 0
True

- ``score(x)`` is ``mu . x`` as a Python float; ``predict(x)`` is ``sign(score)`` with
  ``sign(0) = +1`` (a fresh model flags everything, as in LIBOL).
- ``learn(x, y)`` is one online round on a labelled example and returns an
  :class:`UpdateInfo`.
- ``to_state()`` / ``load_state()`` move the whole numeric state as plain arrays and
  scalars (no pickle); hyper-parameters are configuration and stay apart from it.
- ``run(X, y)`` is progressive validation over a CSR matrix (score each row, then learn
  it) at native speed, bit-identical to calling ``learn`` row by row.

Subclasses declare their hyper-parameters, their state namedtuple (``counts`` first, then
``w``) with its initial arrays, and register two numba kernels for it; see
:mod:`service.learners.driver` for the kernel signatures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
import scipy.sparse as sp

from . import driver
from .errors import InvalidInput, InvalidParameter
from .inputs import SparseVector, canonical, with_intercept

STATE_FORMAT = 1


@dataclass(frozen=True, slots=True)
class UpdateInfo:
    """What one call to ``learn`` did.

    ``score`` is ``mu . x`` before the update (so ``sign(score)`` is the online
    prediction), ``loss`` the loss that drove the update (0 when none), ``updated``
    whether the weights moved, ``rho`` the bias that was in use.
    """

    score: float
    loss: float
    updated: bool
    rho: float

    @property
    def prediction(self) -> int:
        return 1 if self.score >= 0.0 else -1


@dataclass(frozen=True, slots=True)
class StreamResult:
    """Progressive-validation output of :meth:`Learner.run`."""

    scores: np.ndarray  # float64, mu . x_i before learning row i
    updated: np.ndarray  # bool, whether row i moved the weights

    @property
    def predictions(self) -> np.ndarray:
        return np.where(self.scores >= 0.0, 1, -1).astype(np.int8)


class OnlineLearner(Protocol):
    """What the service needs of a learner: :class:`Learner` and the ``eta="auto"``
    ensemble (:class:`service.learners.ensemble.EtaGrid`) both provide it."""

    n_features: int

    @property
    def algorithm(self) -> str: ...

    @property
    def params(self) -> dict[str, Any]: ...

    @property
    def rho(self) -> float: ...

    @property
    def rho_estimate(self) -> float: ...

    def score(self, x: Any) -> float: ...

    def predict(self, x: Any) -> int: ...

    def learn(self, x: Any, y: Any) -> UpdateInfo: ...

    def run(self, X: Any, y: Any) -> StreamResult: ...

    def weights(self) -> np.ndarray: ...

    def to_state(self, copy: bool = True) -> dict[str, Any]: ...

    def load_state(self, state: Mapping[str, Any]) -> None: ...

    def state_nbytes(self) -> int: ...


# --- parameter checks: each returns the normalised value or raises InvalidParameter ------


def positive(name: str) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        v = _real(name, value)
        if not v > 0.0:
            raise InvalidParameter(name, f"must be > 0, got {value!r}")
        return v

    return check


def positive_int(name: str) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise InvalidParameter(name, f"must be an integer >= 1, got {value!r}")
        return int(value)

    return check


def finite(name: str) -> Callable[[Any], float]:
    return lambda value: _real(name, value)


def flag(name: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        if not isinstance(value, bool | np.bool_):
            raise InvalidParameter(name, f"must be true or false, got {value!r}")
        return bool(value)

    return check


def loss_kind(value: Any) -> str:
    if value not in ("I", "II"):
        raise InvalidParameter("loss", f'must be "I" or "II", got {value!r}')
    return str(value)


def rho_value(value: Any) -> float | str:
    if value == "laplace":
        return "laplace"
    v = _real("rho", value)
    if not v > 0.0:
        raise InvalidParameter("rho", f'must be > 0 or "laplace", got {value!r}')
    return v


def alpha_p_value(value: Any) -> float:
    v = _real("alpha_p", value)
    if not 0.0 < v < 1.0:
        raise InvalidParameter(
            "alpha_p", f"must lie in (0, 1) so that alpha_n = 1 - alpha_p > 0, got {value!r}"
        )
    return v


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidParameter(name, f"must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise InvalidParameter(name, f"must be finite, got {value!r}")
    return v


COMMON_PARAMS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "fit_intercept": (False, flag("fit_intercept")),
    "intercept_value": (1.0, finite("intercept_value")),
}
COST_PARAMS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "rho": (1.0, rho_value),
    "alpha_p": (0.5, alpha_p_value),
}


class Learner:
    """Base class: validation, state and the two call paths. See the module docstring."""

    algorithm: ClassVar[str]
    """Registry name, e.g. ``"acog"``."""
    own_params: ClassVar[dict[str, tuple[Any, Callable[[Any], Any]]]] = {}
    """Hyper-parameters of this algorithm: name -> (default, check)."""
    cost_sensitive: ClassVar[bool] = True
    """Whether it takes ``rho`` / ``alpha_p``."""
    state_type: ClassVar[type]
    """The algorithm's state namedtuple; its kernels are registered with the driver."""

    def __init__(self, n_features: int, **params: Any) -> None:
        if isinstance(n_features, bool) or not isinstance(n_features, int | np.integer) or n_features < 1:
            raise InvalidParameter("n_features", f"must be an integer >= 1, got {n_features!r}")
        self.n_features = int(n_features)
        spec = self.param_spec()
        unknown = sorted(set(params) - set(spec))
        if unknown:
            raise InvalidParameter(
                unknown[0], f"is not a parameter of {self.algorithm} (it takes: {', '.join(spec)})"
            )
        self.params: dict[str, Any] = {
            name: check(params[name]) if name in params else default
            for name, (default, check) in spec.items()
        }
        self.dim = self.n_features + (1 if self.params["fit_intercept"] else 0)
        self._check_params()
        self._rho_cfg = self._make_rho_cfg()
        self._hp = np.asarray(self._hyper(), dtype=np.float64)
        self._arrays = self._fresh_state()
        self._st = self.state_type(**self._arrays)

    # --- what subclasses provide ---------------------------------------------------------

    @classmethod
    def param_spec(cls) -> dict[str, tuple[Any, Callable[[Any], Any]]]:
        spec = dict(cls.own_params)
        if cls.cost_sensitive:
            spec.update(COST_PARAMS)
        spec.update(COMMON_PARAMS)
        return spec

    def _check_params(self) -> None:
        """Cross-parameter checks (e.g. sketch size against dimension)."""

    def _hyper(self) -> list[float]:
        """The hyper-parameter vector ``hp`` the update kernel reads."""
        return []

    def _init_arrays(self) -> dict[str, np.ndarray]:
        """Initial state arrays, in the order of the kernel's state tuple."""
        raise NotImplementedError

    # --- the contract --------------------------------------------------------------------

    def score(self, x: Any) -> float:
        """``mu . x``."""
        idx, val = self._vector(x)
        return float(driver.score_one(self._st, idx, val))

    def predict(self, x: Any) -> int:
        """``sign(mu . x)`` with ``sign(0) = +1``: +1 is the anomaly class."""
        return 1 if self.score(x) >= 0.0 else -1

    def learn(self, x: Any, y: Any) -> UpdateInfo:
        """One online round: score ``x``, suffer the loss for label ``y``, update."""
        label = self._label(y)
        return self.learn_checked(self._vector(x), label)

    def learn_checked(self, vector: SparseVector, y: int) -> UpdateInfo:
        """:meth:`learn` for an input already checked: a vector from :meth:`checked` (intercept
        included) and ``y`` in {-1, +1}. Lets an ensemble check once for all its members."""
        s, loss, updated, rho = driver.learn_one(self._st, self._hp, self._rho_cfg, vector[0], vector[1], y)
        return UpdateInfo(float(s), float(loss), bool(updated), float(rho))

    def checked(self, x: Any, y: Any) -> tuple[SparseVector, int]:
        """``x`` as the canonical vector the kernels read (intercept appended) and ``y`` as an int,
        or :class:`InvalidInput`."""
        return self._vector(x), self._label(y)

    def run(self, X: Any, y: Any) -> StreamResult:
        """Progressive validation over the rows of ``X`` (predict row i, then learn it)."""
        csr = self._stream_matrix(X)
        labels = np.asarray(y)
        if labels.shape != (csr.shape[0],):
            raise InvalidInput("y", f"must have one label per row ({csr.shape[0]}), got {labels.shape}")
        if not np.isin(labels, (-1, 1)).all():
            raise InvalidInput("y", "every label must be -1 or +1")
        ys = labels.astype(np.int64)
        scores = np.empty(ys.shape[0], dtype=np.float64)
        updated = np.empty(ys.shape[0], dtype=np.bool_)
        driver.learn_stream(
            self._st, self._hp, self._rho_cfg, csr.indptr.astype(np.int64),
            csr.indices.astype(np.int64), csr.data, ys, scores, updated,
        )  # fmt: skip
        return StreamResult(scores, updated)

    @property
    def rho(self) -> float:
        """The bias the next label will be learned with."""
        return float(driver.current_rho(self._rho_cfg, self._arrays["counts"]))

    @property
    def rho_estimate(self) -> float:
        """The Laplace estimate ``alpha_p (t_n + 1) / (alpha_n (t_p + 1))`` from the labels so far."""
        t_p, t_n = (int(c) for c in self._arrays["counts"])
        alpha_p = float(self.params.get("alpha_p", 0.5))
        return alpha_p * (t_n + 1.0) / ((1.0 - alpha_p) * (t_p + 1.0))

    def weights(self) -> np.ndarray:
        """The weight vector ``mu`` (length ``dim``; the intercept weight last)."""
        return np.array(self._arrays["w"], dtype=np.float64)

    def to_state(self, copy: bool = True) -> dict[str, Any]:
        """The whole numeric state: copies of the arrays plus identifying scalars.

        ``copy=False`` hands out the live arrays instead, for a caller that encodes them before
        anything else can learn (a checkpoint of a large model then costs no memory copy)."""
        state: dict[str, Any] = {
            "format": STATE_FORMAT,
            "algorithm": self.algorithm,
            "n_features": self.n_features,
            "dim": self.dim,
        }
        state.update({name: arr.copy() if copy else arr for name, arr in self._arrays.items()})
        return state

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Replace the state with ``state`` (from ``to_state`` of the same configuration).

        Every array is checked for name, dtype and shape before anything changes, so a
        rejected state leaves the learner as it was.
        """
        for key, expected in (
            ("format", STATE_FORMAT), ("algorithm", self.algorithm),
            ("n_features", self.n_features), ("dim", self.dim),
        ):  # fmt: skip
            if state.get(key) != expected:
                raise InvalidInput("state", f"{key} is {state.get(key)!r}, expected {expected!r}")
        fresh: dict[str, np.ndarray] = {}
        for name, current in self._arrays.items():
            if name not in state:
                raise InvalidInput("state", f"missing array {name!r}")
            arr = np.asarray(state[name])
            if arr.dtype != current.dtype or arr.shape != current.shape:
                raise InvalidInput(
                    "state",
                    f"{name!r} has {arr.dtype}{arr.shape}, expected {current.dtype}{current.shape}",
                )
            fresh[name] = np.array(arr, copy=True, order="C")
        extra = set(state) - set(fresh) - {"format", "algorithm", "n_features", "dim"}
        if extra:
            raise InvalidInput("state", f"unexpected entries {sorted(extra)}")
        self._arrays = fresh
        self._st = self.state_type(**fresh)

    def state_nbytes(self) -> int:
        return sum(int(a.nbytes) for a in self._arrays.values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}(n_features={self.n_features}, {shown})"

    # --- internals -----------------------------------------------------------------------

    def _fresh_state(self) -> dict[str, np.ndarray]:
        arrays = {"counts": np.zeros(2, dtype=np.int64)}  # [t_p, t_n], read by the driver
        arrays.update(self._init_arrays())
        return arrays

    def _make_rho_cfg(self) -> np.ndarray:
        rho = self.params.get("rho", 1.0)
        alpha_p = self.params.get("alpha_p", 0.5)
        if rho == "laplace":
            return np.array([driver.RHO_LAPLACE, np.nan, alpha_p])
        return np.array([driver.RHO_FIXED, float(rho), alpha_p])

    def _vector(self, x: Any) -> SparseVector:
        vector = canonical(x, self.n_features)
        if self.params["fit_intercept"]:
            vector = with_intercept(vector, self.n_features, self.params["intercept_value"])
        return vector

    def _stream_matrix(self, X: Any) -> sp.csr_matrix:
        if not sp.issparse(X):
            X = np.asarray(X, dtype=np.float64)
            if X.ndim != 2:
                raise InvalidInput("X", f"must be 2-D, got shape {X.shape}")
        csr = sp.csr_matrix(X, dtype=np.float64, copy=True)
        if csr.shape[1] != self.n_features:
            raise InvalidInput("X", f"has {csr.shape[1]} columns, expected n_features = {self.n_features}")
        if not np.isfinite(csr.data).all():
            raise InvalidInput("X", "contains NaN or inf")
        csr.sum_duplicates()
        csr.eliminate_zeros()
        csr.sort_indices()
        if self.params["fit_intercept"]:
            column = sp.csr_matrix(np.full((csr.shape[0], 1), self.params["intercept_value"]))
            csr = sp.hstack([csr, column], format="csr")
            csr.eliminate_zeros()
        return csr

    @staticmethod
    def _label(y: Any) -> int:
        if isinstance(y, bool | np.bool_) or y not in (-1, 1):
            raise InvalidInput("y", f"must be -1 or +1, got {y!r}")
        return int(y)
