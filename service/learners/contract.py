"""The learner contract's types: what one update did, what a stream gave, and the protocol every
learner (:class:`~service.learners.base.Learner`, the ``eta="auto"`` ensemble) provides. See
:mod:`service.learners.base` for the meaning of each member."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .inputs import SparseVector
from .migration import FeatureMigration


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
    ensemble (:class:`service.learners.ensemble.EtaGrid`) both provide it. See the module
    docstring for the meaning of each member."""

    n_features: int

    @property
    def algorithm(self) -> str: ...

    @property
    def params(self) -> dict[str, Any]: ...

    @property
    def rho(self) -> float: ...

    @property
    def rho_estimate(self) -> float: ...

    @property
    def eta(self) -> float: ...

    def score(self, x: Any) -> float: ...

    def predict(self, x: Any) -> int: ...

    def learn(self, x: Any, y: Any) -> UpdateInfo: ...

    def score_unchecked(self, vector: SparseVector) -> float: ...

    def learn_unchecked(self, vector: SparseVector, y: int) -> UpdateInfo: ...

    def run(self, X: Any, y: Any) -> StreamResult: ...

    def weights(self) -> np.ndarray: ...

    def describe(self) -> dict[str, Any]: ...

    def to_state(self, copy: bool = True) -> dict[str, Any]: ...

    def borrowed_state(self) -> contextlib.AbstractContextManager[dict[str, Any]]: ...

    def load_state(self, state: Mapping[str, Any]) -> None: ...

    def state_nbytes(self) -> int: ...

    def migrate(self, migration: FeatureMigration) -> OnlineLearner: ...
