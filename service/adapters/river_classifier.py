"""``ACOGClassifier``: the library's learners as a river classifier, on named features.

>>> from river import datasets, evaluate, metrics
>>> from service.adapters.river_classifier import ACOGClassifier
>>> model = ACOGClassifier(max_features=9)
>>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.BalancedAccuracy())
BalancedAccuracy: 89.34%

An example ``x`` is a dict ``{name: value}``. It goes through the very code a service model
with named features runs (:class:`service.features.FeatureSpace`): the values are
L2-normalised over the names present (for the default ensemble they are passed as they are, and
each member reads them in its own input form: L2 or online standardisation), and each name gets
an index in the model's :class:`~service.features.FeatureRegistry` the first time it is *learned*
(names of one example in sorted order), up to ``max_features`` names (an open schema) or exactly
``feature_names`` (a closed one). At prediction time a name never learned weighs nothing.
So ``predict_one`` before ``learn_one`` on a stream, as river's progressive validation does,
gives exactly what the service answers for the same stream with every label applied at once.

Labels: ``True``/``1``/``+1`` is the positive class (the anomaly), ``False``/``0``/``-1``
the negative; ``predict_one`` answers ``True`` for ``sign(mu . x) = +1`` (with
``sign(0) = +1``), ``score_one`` answers the margin ``mu . x``. The learner's margin is not a
probability, so ``predict_proba_one`` is not offered (river's metrics that need one, such
as ``ROCAUC``, cannot be used).

**Per call.** A row whose names are all registered takes a short path with the same result: the
names are looked up one by one (no sorting in Python), and one compiled call
(:func:`service.normalization.gathered_row`) checks the values, L2-normalises them in the sorted
order of the names (from each name's rank among the registered names, kept up to date as names
register) and writes the learner's input, intercept included, into buffers the adapter keeps
(no allocation a row of up to ``SHORT_ROW`` names); a single learner then runs its kernel entry
points (``score_checked``/``learn_checked``) directly, and for one whose score is ``w . x``
(``linear_score``: ACOG, AROW, the perceptron and PA family, Pegasos, ...) ``predict_one``'s
compiled call also makes that sum, in the order ``linear_score`` makes it. A row with a name not
registered yet, or one that is refused, takes the service's parser, whose errors name the field.

Every other parameter is a field of the service's model configuration
(:class:`service.model_config.ModelConfig`: ``algorithm``, ``objective``, ``alpha_p``,
``c_p``, ``rho``, ``eta``, ``loss``, ...), with the service's defaults.
"""

from __future__ import annotations

import bisect
import gc
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np
from numba.core.dispatcher import Dispatcher
from numba.typed import List as TypedList
from river import base

from ..features import FeatureRegistry, FeatureSpace
from ..learners import OnlineLearner
from ..learners.base import Learner
from ..learners.first_order import linear_score
from ..learners.inputs import SparseVector
from ..model_config import ModelConfig
from ..normalization import gathered_row

NO_WEIGHTS = np.empty(0, np.float64)
"""What :func:`gathered_row` reads as "no score wanted"."""


def plus_minus_one(y: Any) -> int:
    """A river binary label as the learners read it: +1 for the positive class, else -1."""
    if y is True or (not isinstance(y, bool) and y == 1):
        return 1
    if y is False or (not isinstance(y, bool) and y in (0, -1)):
        return -1
    raise ValueError(f"y: a binary label must be True/False, 1/0 or +1/-1, got {y!r}")


class NameRanks:
    """``rank[i]``: the place of the registry's name ``i`` in the sorted order of its names, kept
    up to date as names register (each new name is inserted: O(names) once per name)."""

    def __init__(self, registry: FeatureRegistry) -> None:
        self.registry = registry
        self._names: list[str] = []
        self._sorted: list[str] = []
        self._rank = np.empty(0, np.int64)

    def current(self) -> np.ndarray:
        names = self.registry.names
        if names is not self._names or len(names) < len(self._sorted):  # a registry loaded anew
            self._names, self._sorted, self._rank = names, [], np.empty(0, np.int64)
        if len(names) > len(self._sorted):
            rank = self._rank
            for name in names[len(self._sorted) :]:
                r = bisect.bisect_left(self._sorted, name)
                self._sorted.insert(r, name)
                rank[rank >= r] += 1
                rank = np.append(rank, r)
            self._rank = rank
        return self._rank


class ACOGClassifier(base.Classifier):
    """A cost-sensitive online classifier of the ACOG family over named features.

    Parameters
    ----------
    max_features
        How many distinct names the model may register (an open schema). ``None`` with
        ``feature_names`` closes the schema.
    feature_names
        Names known from the start (with ``max_features=None``: the only names accepted).
    params
        Fields of the service's model configuration (``algorithm``, ``objective``, ...).
    """

    def __init__(
        self, max_features: int | None = 1000, feature_names: list[str] | None = None, **params: Any
    ) -> None:
        self.max_features = max_features
        self.feature_names = feature_names
        self.params = params
        self.config = ModelConfig.model_validate(
            {**params, "max_features": max_features, "feature_names": feature_names}
        )
        self.space = FeatureSpace(self.config)
        self.learner: OnlineLearner = self.config.build_learner()
        assert self.space.registry is not None
        self._ranks = NameRanks(self.space.registry)
        self._last: tuple[dict[Any, Any], SparseVector] | None = None
        """The last dict the short path read and its vector: progressive validation predicts,
        then learns, the same ``x``, read once (a registered name keeps its index, so the vector
        of an equal dict stays the same)."""
        self._buffers = np.empty(64, np.int64), np.empty(64, np.float64)
        """Where the short path writes the learner's input (grown to the longest row read, intercept
        included): the vector it returns, and :attr:`_last`'s, are views on them, read before the
        next row is written."""
        learner = self.learner
        direct = (
            isinstance(learner, Learner)
            and type(learner).kernel_vector is Learner.kernel_vector
            and type(learner).score_unchecked is Learner.score_unchecked
            and type(learner).learn_unchecked is Learner.learn_unchecked
        )
        # a single learner's kernel input is the canonical vector with the intercept appended
        # (Learner.kernel_vector): the short path appends it and calls the kernels' entry points
        self._tail: tuple[int, float] = (-1, 0.0)
        self._score_fast, self._learn_fast = learner.score_unchecked, learner.learn_unchecked
        self._weights: Callable[[], np.ndarray] | None = None
        """A learner whose score is ``w . x`` (:func:`linear_score`): its live weights, which the
        short path's compiled call then scores ``x`` against (:meth:`predict_one`)."""
        self._margin = np.empty(1, np.float64)
        if direct:
            assert isinstance(learner, Learner)
            if learner.params["fit_intercept"]:
                value = float(learner.params["intercept_value"])
                self._tail = learner.n_features, value
            self._score_fast, self._learn_fast = learner.score_checked, learner.learn_checked
            if type(learner).learn_checked is Learner.learn_checked:  # the round, without its record
                self._learn_fast = learner.learn_kernel
            if type(learner).score_checked is Learner.score_checked and learner.kernels[0] is linear_score:
                self._weights = learner.live_weights

    @property
    def _raw_memory_usage(self) -> int:
        """The bytes this model holds (river's ``_memory_usage`` reads it): river's own walk of the
        object graph (``sys.getsizeof`` of every object reached through ``gc.get_referents``, and
        every numpy array's buffer), except that it does not enter numba's compiled kernels and
        typed lists. A kernel belongs to the process, shared by every model, and reaches the whole of
        numba's JIT engine, whose weak proxies to freed LLVM modules the walk cannot even test; a
        typed list holds learners' own arrays, counted where the learners hold them."""
        stops = (type, types.ModuleType, types.FunctionType, Dispatcher, TypedList)
        seen: set[int] = set()
        size = 0
        pending: list[Any] = [self]
        while pending:
            step: list[Any] = []
            for obj in pending:
                try:
                    if isinstance(obj, stops) or id(obj) in seen:
                        continue
                except ReferenceError:  # a weak proxy whose object is gone: nothing to count
                    continue
                seen.add(id(obj))
                size += sys.getsizeof(obj)
                if isinstance(obj, np.ndarray):
                    size += obj.nbytes
                step.append(obj)
            pending = gc.get_referents(*step)
        return size

    @property
    def registry(self) -> list[str]:
        """The names registered so far, in index order."""
        assert self.space.registry is not None
        return list(self.space.registry.names)

    def learn_one(self, x: dict[base.typing.FeatureName, Any], y: base.typing.ClfTarget) -> None:
        """One online round: register ``x``'s new names, then learn ``(x, y)``."""
        label = plus_minus_one(y)
        vector = self._gathered(x)
        if vector is not None:
            self._learn_fast(vector, label)
            return
        example, _ = self.space.parse(dict(x), "x")
        self.learner.learn_unchecked(self.space.vector(example), label)

    def score_one(self, x: dict[base.typing.FeatureName, Any]) -> float:
        """The margin ``mu . x`` (names not learned yet weigh nothing)."""
        vector = self._gathered(x)
        if vector is not None:
            return float(self._score_fast(vector))
        return self.learner.score_unchecked(self.space.parse(dict(x), "x")[1])

    def predict_one(self, x: dict[base.typing.FeatureName, Any], **kwargs: Any) -> bool:
        """``True`` (the positive class, an anomaly) when ``mu . x >= 0``."""
        weights, last = self._weights, self._last
        scored = (  # a linear learner, a row not read just before: read and scored in one call
            weights is not None
            and (last is None or last[0] != x)
            and self._gathered(x, weights()) is not None
        )
        if scored:
            return bool(self._margin[0] >= 0.0)
        vector = self._gathered(x)
        if vector is not None:
            return bool(self._score_fast(vector) >= 0.0)
        return self.score_one(x) >= 0.0

    def _gathered(self, x: Any, weights: np.ndarray = NO_WEIGHTS) -> SparseVector | None:
        """The short path (see the module docstring): the learner's input for a ``dict`` whose
        names are all registered and whose values are finite numbers, else ``None`` (the
        service's parser then reads ``x``, registers its names or names the problem). With
        ``weights`` (a linear learner's), the row is read again and ``self._margin[0]`` is its
        score ``w . x``, made in the same compiled call."""
        last = self._last
        if last is not None and weights is NO_WEIGHTS and last[0] == x:
            return last[1]
        n = len(x) if type(x) is dict else 0
        if not n:
            return None
        space = self.space
        assert space.registry is not None
        index = space.registry.indices(x, n)
        try:
            values = np.fromiter(x.values(), np.float64, n)
        except (TypeError, ValueError):
            return None
        out_idx, out_val = self._buffers
        if n >= out_idx.shape[0]:
            size = 2 * (n + 1)
            out_idx, out_val = self._buffers = np.empty(size, np.int64), np.empty(size, np.float64)
        self._last = None  # its vector is a view on the buffers written now
        tail, tail_value = self._tail
        rank = self._ranks.current()
        count = gathered_row(
            values, index, rank, space.unit_rows, space.keep_zeros, tail, tail_value, out_idx, out_val,
            weights, self._margin,
        )  # fmt: skip
        if count < 0:
            return None
        idx, val = out_idx[:count], out_val[:count]
        if not space.keep_zeros:  # equal dicts give equal vectors (not so for -0.0 and 0.0 kept)
            self._last = dict(x), (idx, val)
        return idx, val

    @classmethod
    def _unit_test_params(cls) -> Any:
        yield {"max_features": 50}
        yield {"max_features": 50, "algorithm": "arow", "objective": "cost", "c_p": 0.8}
