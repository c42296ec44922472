"""The contract every learner follows, and the parts they all share.

A learner is a small in-memory object (river's ``learn_one``/``predict_one`` shape) whose
state is a fixed set of numpy arrays (LIBOL's ``model`` struct):

>>> from service.learners import create
>>> learner = create("acog", n_features=3, loss="II", eta=1.0, rho=2.0)
>>> learner.learn(np.array([1.0, 0.0, 0.0]), +1).updated
True
>>> learner.score(np.array([1.0, 0.0, 0.0])) > 0
True

The contract (:class:`OnlineLearner`; ``tests/learners/test_conformance.py`` checks it for
every registered algorithm and for the ``eta="auto"``/``loss="auto"`` ensembles):

- ``score(x)`` is ``mu . x`` as a Python float; ``predict(x)`` is ``sign(score)`` with
  ``sign(0) = +1`` (a fresh model flags everything, as in LIBOL).
- ``learn(x, y)`` is one online round on a labelled example and returns an
  :class:`UpdateInfo`. ``x`` is a dense vector, an ``(indices, values)`` pair or a one-row
  scipy matrix; all three give bit-identical results. Bad input raises
  :class:`~service.learners.errors.InvalidInput` naming the field and changes nothing; the
  caller's arrays are never modified.
- ``score_unchecked(v)`` and ``learn_unchecked(v, y)`` are the entry points for a vector
  validated at the edge (already canonical: :meth:`Learner.kernel_vector` says what that is)
  and a label in {-1, +1}: nothing is checked again, and the results are the bits of
  ``score(v)`` and ``learn(v, y)``. The service's feature parser validates each request's
  vector once; the learner does not do it a second time.
- ``run(X, y)`` is progressive validation over a CSR matrix (score each row, then learn
  it) at native speed, bit-identical to calling ``learn`` row by row, state included.
- ``eta`` is the learning rate in use (``NaN`` for an algorithm without one);
  ``describe()`` is a JSON-able dict of facts for ``GET /models/{name}`` (``"eta"``: the rate
  and loss in use, and for an ensemble its members; ``"sketch"`` for the sketched learners).
- ``to_state()`` / ``load_state()`` move the whole numeric state as plain arrays and
  scalars (no pickle), tagged with ``format`` (:data:`STATE_FORMAT`), ``algorithm`` and the
  dimensions; ``load_state`` checks all of them and every array before anything changes.
  Hyper-parameters are configuration and stay apart from the state.
- ``borrowed_state()`` lends the state without copying it; see *Sharing live arrays* below.
- Same configuration, same inputs: same bits (there is no randomness).

**The shape of an update.** Mathematically one round is a pure function
``(state, params, x, y, score, rho) -> (state', loss, updated)``, and
:mod:`research.reference.steps` writes every algorithm exactly so, on dense vectors. The
numba kernels compute the same ``state'`` but write it over ``state``'s arrays in place (no
allocation of the model's size per label); :mod:`service.learners.driver` runs them.

**Sharing live arrays.** ``to_state()`` copies. A caller that must not pay for a copy (the
checkpoint writer, for a model of hundreds of megabytes) uses
``with learner.borrowed_state() as state:``: the same dict, holding *read-only views* of the
live arrays. Until the block ends, ``learn``, ``run`` and ``load_state`` raise
:class:`~service.learners.errors.StateBorrowed` instead of changing what the borrower reads;
the views must not be used after the block.

**Adding an algorithm** (one module, one registration):

1. A *params record*: a ``typing.NamedTuple`` of the typed scalars the update reads, floats
   and ints, e.g. ``class FooParams(NamedTuple): eta: float; loss: int``. Numba passes it as
   a struct. An enumeration (:class:`~service.learners.losses.Loss`) is held as its ``int``
   and compared with its members in the kernel (numba types an ``IntEnum`` argument slowly).
   With nothing to read, use :class:`~service.learners.driver.NoParams`.
2. A *state record*: ``FooState = namedtuple("FooState", ["counts", "w", ...])`` of numpy
   arrays, ``counts`` (``[t_p, t_n]``, kept by the driver) first and ``w`` second. Its type
   selects the kernels, so every algorithm has its own state type.
3. Two kernels, decorated with :func:`service.jit_cache.kernel`:
   ``foo_score(st, idx, val) -> float`` (``mu . x``; :func:`~service.learners.first_order.linear_score`
   when ``mu`` is ``w``) and ``foo_update(st, p, idx, val, y, score, rho) -> (loss, updated)``,
   the in-place form of the pure update above (``idx``/``val``: the canonical sparse ``x``,
   ``p``: the params record). Kernels live under ``service/learners/`` (the files whose
   digest keys the disk cache; ``@kernel`` refuses others).
4. A :class:`Learner` subclass declaring ``algorithm`` (the registry name), ``own_params``
   (name -> ``(default, check)``; the checks below normalise and raise
   :class:`~service.learners.errors.InvalidParameter`), ``cost_sensitive``,
   ``state_type = FooState``, ``params_type = FooParams``,
   ``kernels = (foo_score, foo_update)``, ``kernel_params()`` (the record from the checked
   ``self.params``), ``_init_arrays()`` (the arrays of the state after ``counts``) and, when
   ``mu`` is not ``w``, ``weights()``; optionally ``_check_params()`` and ``describe()``.
5. One registration: add the class to ``ALGORITHMS`` in :mod:`service.learners`
   (:func:`register` binds its kernels). The conformance suite, the warm-up
   (:func:`service.learners.warm_up`) and ``eta="auto"``/``loss="auto"`` (when it takes
   ``eta``/``loss``) then cover it; add its reference step to :mod:`research.reference.steps`
   and, in ``tests/learners/streams.py::params_for``, values of its new hyper-parameters
   that exercise every branch.

Randomness (random features, say) is drawn in ``_init_arrays`` from a ``seed``
hyper-parameter (``numpy.random.default_rng(seed)``), so that what it draws is part of the
state: replicas and recovery end in the same bits.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
import scipy.sparse as sp

from . import driver
from .driver import NoParams, RhoConfig, RhoMode
from .errors import InvalidInput, InvalidParameter
from .inputs import SparseVector, canonical, read_only, with_intercept
from .interface import LearnerInterface, bump_state_epoch
from .params import COMMON_PARAMS as COMMON_PARAMS
from .params import COST_PARAMS as COST_PARAMS
from .params import _real as _real
from .params import alpha_p_value as alpha_p_value
from .params import finite as finite
from .params import flag as flag
from .params import loss_kind as loss_kind
from .params import positive as positive
from .params import positive_int as positive_int
from .params import rho_value as rho_value

STATE_FORMAT = 1
"""Version of the ``to_state`` layout; ``load_state`` refuses any other."""
BOOLEANS = (bool, np.bool_)
"""The types a label may not have (``True == 1``): ``isinstance`` of a tuple, made once."""


class UpdateInfo(NamedTuple):
    """What one call to ``learn`` did.

    ``score`` is ``mu . x`` before the update (so ``sign(score)`` is the online
    prediction), ``loss`` the loss that drove the update (0 when none), ``updated``
    whether the weights moved, ``rho`` the bias that was in use. A named tuple: one is made per
    ``learn`` call, in a third of a frozen dataclass's time (0.2 against 0.65 us).
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


OnlineLearner = LearnerInterface
"""What the service needs of a learner: :class:`Learner` and the ``eta="auto"`` ensemble
(:class:`service.learners.ensemble.EtaGrid`) both derive from it. See the module docstring for the
meaning of each member."""


class Learner(LearnerInterface):
    """Base class of a single learner: validation, state and the two call paths. See the module
    docstring; what it shares with the ensemble is in :class:`LearnerInterface`."""

    algorithm: str
    """Registry name, e.g. ``"acog"`` (a class attribute of each algorithm)."""
    own_params: ClassVar[dict[str, tuple[Any, Callable[[Any], Any]]]] = {}
    """Hyper-parameters of this algorithm: name -> (default, check)."""
    cost_sensitive: ClassVar[bool] = True
    """Whether it takes ``rho`` / ``alpha_p``."""
    state_type: ClassVar[type]
    """The algorithm's state record (a namedtuple of arrays, ``counts`` then ``w``)."""
    params_type: ClassVar[type] = NoParams
    """The algorithm's params record, what :meth:`kernel_params` returns."""
    kernels: ClassVar[tuple[Callable[..., Any], ...]]
    """``(score, update)``: the two numba kernels, bound to ``state_type`` by :func:`register`; a
    third, when given, is the fused step (:attr:`driver.Kernels.step`)."""
    flat_record: ClassVar[Callable[..., Any] | None] = None
    """The kernel making the state record of ``_flat``, when that is not ``tuple(record)``."""
    needs_presence: ClassVar[bool] = False
    """Whether it reads which features are present: its input keeps explicit zeros (a dense
    vector is all present; a sparse pair or matrix holds the present indices)."""

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
        self._params: dict[str, Any] = {
            name: check(params[name]) if name in params else default
            for name, (default, check) in spec.items()
        }
        self.dim = self.n_features + (1 if self.params["fit_intercept"] else 0)
        self._check_params()
        bound = driver.registered(self.state_type)
        if bound is None or bound.params_type is not self.params_type:
            raise TypeError(f"{type(self).__name__} is not registered (service.learners.base.register)")
        self._rho_cfg = self._make_rho_cfg()
        self._kernel_params = self.kernel_params()
        if type(self._kernel_params) is not self.params_type:
            raise TypeError(
                f"{type(self).__name__}.kernel_params() must return a {self.params_type.__name__}"
            )
        self._entries = driver.entries(self.state_type)
        self._flat_params = tuple(self._kernel_params)
        self._flat_rho = tuple(self._rho_cfg)
        self._arrays = self._fresh_state()
        self._st = self.state_type(**self._arrays)
        self._borrows = 0
        self._intercept: SparseVector | None = None
        """The intercept's index and value as one-element arrays, appended by :meth:`kernel_vector`."""
        if self.params["fit_intercept"]:
            value = float(self.params["intercept_value"])
            self._intercept = np.array([self.n_features], np.int64), np.array([value], np.float64)

    @property
    def params(self) -> dict[str, Any]:
        """The checked hyper-parameters, defaults filled in."""
        return self._params

    @property
    def _st(self) -> Any:
        """The state record over the arrays of ``self._arrays``; setting it also sets the plain
        tuple of the same arrays the single-call kernels take (:class:`driver.Entries`)."""
        return self._record

    @_st.setter
    def _st(self, record: Any) -> None:
        self._record = record
        self._flat = tuple(record)
        bump_state_epoch()

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

    def kernel_params(self) -> NamedTuple:
        """The params record the update kernel reads, built from the checked ``self.params``."""
        return NoParams()

    def _init_arrays(self) -> dict[str, np.ndarray]:
        """Initial state arrays, in the order of the state record (``counts`` excluded)."""
        raise NotImplementedError

    # --- the contract --------------------------------------------------------------------

    def score(self, x: Any) -> float:
        """``mu . x``."""
        return self.score_checked(self._vector(x))

    def score_checked(self, vector: SparseVector) -> float:
        """``mu . x`` of a vector in the kernels' form (what :meth:`checked` returns)."""
        return float(self._entries.score_one(self._flat, vector[0], vector[1]))

    def score_unchecked(self, vector: SparseVector) -> float:
        """:meth:`score` of a vector validated at the edge, not validated again: see
        :meth:`kernel_vector` for what ``vector`` must be."""
        return self.score_checked(self.kernel_vector(vector))

    def learn_unchecked(self, vector: SparseVector, y: int) -> UpdateInfo:
        """:meth:`learn` of a vector validated at the edge (see :meth:`kernel_vector`) and a label
        ``y`` already in {-1, +1}; nothing is validated again."""
        return self.learn_checked(self.kernel_vector(vector), y)

    def kernel_vector(self, vector: SparseVector) -> SparseVector:
        """A canonical vector (what :func:`~service.learners.inputs.canonical` returns for this
        learner's ``n_features``: int64 indices strictly increasing in ``[0, n_features)``, finite
        float64 values, explicit zeros only where the learner reads presence) in the form the
        kernels read: the intercept appended. Nothing is checked: the caller validated ``vector``
        (the service's feature parser does, once per request)."""
        intercept = self._intercept
        if intercept is None:
            return vector
        return np.concatenate((vector[0], intercept[0])), np.concatenate((vector[1], intercept[1]))

    def learn(self, x: Any, y: Any) -> UpdateInfo:
        """One online round: score ``x``, suffer the loss for label ``y``, update.

        ``learn(x, y)`` is ``learn_checked(*checked(x, y))``."""
        return self.learn_checked(*self.checked(x, y))

    def checked(self, x: Any, y: Any) -> tuple[SparseVector, int]:
        """The first half of :meth:`learn`: ``x`` as the canonical vector the kernels read
        (intercept appended) and ``y`` as an int in {-1, +1}, or :class:`InvalidInput`.

        Learners of the same ``n_features`` and intercept read the same vector, so a composite
        learner (the ``eta="auto"`` ensemble) checks an input once for all its members."""
        return self._vector(x), self._label(y)

    def learn_checked(self, vector: SparseVector, y: int) -> UpdateInfo:
        """The second half of :meth:`learn`: one round on what :meth:`checked` returned (by
        this learner or one with the same ``n_features`` and intercept); nothing is checked
        again."""
        s, loss, updated, rho = self.learn_kernel(vector, y)
        return UpdateInfo(float(s), float(loss), bool(updated), float(rho))

    def learn_kernel(self, vector: SparseVector, y: int) -> tuple[Any, Any, Any, Any]:
        """This class's :meth:`learn_checked` without its :class:`UpdateInfo`: the kernel's numpy
        ``(score, loss, updated, rho)``, for a caller that reads none (the river adapter, the
        ensemble). A subclass whose round needs more than the kernel (the forest makes room first)
        overrides this; one that overrides :meth:`learn_checked` instead is stepped by it."""
        self._refuse_if_borrowed()
        return self._entries.learn_one(self._flat, self._flat_params, self._flat_rho, vector[0], vector[1], y)

    def run(self, X: Any, y: Any) -> StreamResult:
        """Progressive validation over the rows of ``X`` (predict row i, then learn it)."""
        self._refuse_if_borrowed()
        csr = self._stream_matrix(X)
        labels = np.asarray(y)
        if labels.shape != (csr.shape[0],):
            raise InvalidInput("y", f"must have one label per row ({csr.shape[0]}), got {labels.shape}")
        if not np.isin(labels, (-1, 1)).all():
            raise InvalidInput("y", "every label must be -1 or +1")
        ys = labels.astype(np.int64)
        scores = np.empty(ys.shape[0], dtype=np.float64)
        updated = np.empty(ys.shape[0], dtype=np.bool_)
        indptr, indices = csr.indptr.astype(np.int64), csr.indices.astype(np.int64)
        self._learn_stream(indptr, indices, csr.data, ys, scores, updated)
        return StreamResult(scores, updated)

    def _learn_stream(
        self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, ys: np.ndarray,
        scores: np.ndarray, updated: np.ndarray,
    ) -> None:  # fmt: skip
        """Learn the canonical CSR rows in one compiled loop, writing each row's score and flag."""
        driver.learn_stream(
            self._st, self._kernel_params, self._rho_cfg, indptr, indices, data, ys, scores, updated
        )

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

    @property
    def eta(self) -> float:
        """The learning rate, or NaN for an algorithm without one."""
        return float(self.params["eta"]) if "eta" in self.params else math.nan

    def describe(self) -> dict[str, Any]:
        """JSON-able facts: ``{"eta": {"selected": eta, "loss": loss}}`` for an algorithm with a
        learning rate, nothing otherwise; subclasses add their own (see the sketches)."""
        if "eta" not in self.params:
            return {}
        return {"eta": {"selected": self.eta, "loss": self.params.get("loss")}}

    def weights(self) -> np.ndarray:
        """The weight vector ``mu`` (length ``dim``; the intercept weight last)."""
        return np.array(self._arrays["w"], dtype=np.float64)

    def live_weights(self) -> np.ndarray:
        """``mu`` itself, the array the kernels update in place (what :meth:`weights` copies): for a
        caller that reads it between two updates, the ensemble's one-call vote. Never write to it."""
        return self._arrays["w"]

    def to_state(self, copy: bool = True) -> dict[str, Any]:
        """The whole numeric state: copies of the arrays plus identifying scalars.

        ``copy=False`` gives read-only views of the live arrays without the guard of
        :meth:`borrowed_state`; it remains for callers written before ``borrowed_state``."""
        return self._state_dict(np.copy if copy else read_only)

    @contextlib.contextmanager
    def borrowed_state(self) -> Iterator[dict[str, Any]]:
        """``to_state()`` without the copies: read-only views of the live arrays, valid inside
        the ``with`` block, during which ``learn``, ``run`` and ``load_state`` raise
        :class:`StateBorrowed`. Borrows nest."""
        self._borrows += 1
        try:
            yield self._state_dict(read_only)
        finally:
            self._borrows -= 1

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Replace the state with ``state`` (from ``to_state`` of the same configuration).

        ``format``, ``algorithm``, the dimensions and every array (name, dtype, shape) are
        checked before anything changes, so a rejected state leaves the learner as it was.
        """
        self._refuse_if_borrowed()
        for key, expected in (
            ("format", STATE_FORMAT), ("algorithm", self.algorithm),
            ("n_features", self.n_features), ("dim", self.dim),
        ):  # fmt: skip
            if state.get(key) != expected:
                raise InvalidInput("state", f"{key} is {state.get(key)!r}, expected {expected!r}")
        fresh: dict[str, np.ndarray] = {}
        for name, current in self._state_templates(state).items():
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

    def _state_templates(self, state: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        """The arrays ``load_state`` takes, each with the dtype and shape it must have: the current
        ones (a learner whose shapes depend on its state, OPID, derives them from ``state``)."""
        return self._arrays

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}(n_features={self.n_features}, {shown})"

    # --- internals -----------------------------------------------------------------------

    def _state_dict(self, share: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any]:
        state: dict[str, Any] = {
            "format": STATE_FORMAT,
            "algorithm": self.algorithm,
            "n_features": self.n_features,
            "dim": self.dim,
        }
        state.update({name: share(arr) for name, arr in self._arrays.items()})
        return state

    def _fresh_state(self) -> dict[str, np.ndarray]:
        arrays = {"counts": np.zeros(2, dtype=np.int64)}  # [t_p, t_n], read by the driver
        arrays.update(self._init_arrays())
        return arrays

    def _make_rho_cfg(self) -> RhoConfig:
        rho = self.params.get("rho", 1.0)
        alpha_p = float(self.params.get("alpha_p", 0.5))
        if rho == "laplace":
            return RhoConfig(int(RhoMode.LAPLACE), math.nan, alpha_p)
        return RhoConfig(int(RhoMode.FIXED), float(rho), alpha_p)

    def _vector(self, x: Any) -> SparseVector:
        vector = canonical(x, self.n_features, keep_zeros=self.needs_presence)
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
        if isinstance(y, BOOLEANS) or y not in (-1, 1):
            raise InvalidInput("y", f"must be -1 or +1, got {y!r}")
        return int(y)


def register(classes: Iterable[type[Learner]]) -> dict[str, type[Learner]]:
    """Bind each class's ``kernels`` to its ``state_type`` in the driver; returns the
    registry ``{algorithm: class}``. Names and state types must be unique."""
    registry: dict[str, type[Learner]] = {}
    for cls in classes:
        if cls.algorithm in registry:
            raise ValueError(f"two learners are called {cls.algorithm!r}")
        kernels, step_fn = cls.kernels, (cls.kernels[2] if len(cls.kernels) > 2 else None)
        driver.register(cls.state_type, cls.params_type, kernels[0], kernels[1], step_fn, cls.flat_record)
        registry[cls.algorithm] = cls
    return registry
