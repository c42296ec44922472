"""The learner interface every learner implements, single (:class:`service.learners.base.Learner`)
or composite (the ``eta="auto"`` ensemble, :class:`service.learners.ensemble.EtaGrid`), and the
parts of it they share: the decision ``predict = sign(score)`` with ``sign(0) = +1``, the guard of
a lent state, and schema migration. The meaning of every member is in :mod:`service.learners.base`
(the contract); ``tests/learners/test_conformance.py`` checks it for every registered algorithm and
every ensemble form.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from .errors import StateBorrowed
from .inputs import SparseVector
from .migration import FeatureMigration, migrate

_state_epoch = 0


def state_epoch() -> int:
    """A count, for the whole process, of the events that can give a learner other arrays or lend
    its arrays out: a new state record (:attr:`service.learners.base.Learner._st`, set when a
    learner is made, loads a state or grows) and a borrow taken or given back. A cache that holds
    learners' arrays (the ensemble's typed lists of its members' records,
    :mod:`service.learners.member_steps`) is current while the count has not moved."""
    return _state_epoch


def bump_state_epoch() -> None:
    """Note one such event (see :func:`state_epoch`)."""
    global _state_epoch
    _state_epoch += 1


class LearnerInterface(abc.ABC):
    """What the service needs of a learner (see :mod:`service.learners.base`)."""

    n_features: int
    algorithm: str
    """The registry name (``"auto:<name>"`` for the ensemble)."""

    @property
    def _borrows(self) -> int:
        """Borrows of the state in progress (:meth:`borrowed_state`); while > 0 nothing may change it."""
        count: int = getattr(self, "_borrow_count", 0)
        return count

    @_borrows.setter
    def _borrows(self, count: int) -> None:
        self._borrow_count = count
        bump_state_epoch()

    @property
    @abc.abstractmethod
    def params(self) -> dict[str, Any]:
        """The hyper-parameters (configuration, apart from the state)."""

    @property
    @abc.abstractmethod
    def rho(self) -> float: ...

    @property
    @abc.abstractmethod
    def rho_estimate(self) -> float: ...

    @property
    @abc.abstractmethod
    def eta(self) -> float: ...

    @abc.abstractmethod
    def score(self, x: Any) -> float: ...

    def predict(self, x: Any) -> int:
        """``sign(score(x))`` with ``sign(0) = +1``: +1 is the anomaly class."""
        return 1 if self.score(x) >= 0.0 else -1

    @abc.abstractmethod
    def learn(self, x: Any, y: Any) -> Any:
        """One online round; an :class:`~service.learners.base.UpdateInfo`."""

    @abc.abstractmethod
    def score_unchecked(self, vector: SparseVector) -> float:
        """:meth:`score` of a canonical vector validated at the edge (the service's feature parser):
        every transform the learner applies is applied, only the checks are skipped; the same bits."""

    def predict_unchecked(self, vector: SparseVector) -> int:
        """:meth:`predict` of a vector validated at the edge: the sign of :meth:`score_unchecked`
        (a learner may find it with less work, never another answer)."""
        return 1 if self.score_unchecked(vector) >= 0.0 else -1

    @abc.abstractmethod
    def learn_unchecked(self, vector: SparseVector, y: int) -> Any:
        """:meth:`learn` of a canonical vector validated at the edge and a label already in
        {-1, +1}; nothing is checked again, the same bits and the same state."""

    @abc.abstractmethod
    def run(self, X: Any, y: Any) -> Any:
        """Progressive validation over a stream; a :class:`~service.learners.base.StreamResult`."""

    @abc.abstractmethod
    def weights(self) -> np.ndarray: ...

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]: ...

    @abc.abstractmethod
    def to_state(self, copy: bool = True) -> dict[str, Any]: ...

    @abc.abstractmethod
    def borrowed_state(self) -> contextlib.AbstractContextManager[dict[str, Any]]: ...

    @abc.abstractmethod
    def load_state(self, state: Mapping[str, Any]) -> None: ...

    @abc.abstractmethod
    def state_nbytes(self) -> int: ...

    def migrate(self, migration: FeatureMigration) -> LearnerInterface:
        """This learner carried onto a new feature schema (:mod:`service.learners.migration`); the
        learner itself is left as it was."""
        moved: LearnerInterface = migrate(self, migration)
        return moved

    def _refuse_if_borrowed(self) -> None:
        if self._borrows:
            kind = "ensemble" if getattr(self, "members", None) is not None else "learner"
            raise StateBorrowed(f"the state of this {self.algorithm} {kind} is borrowed (borrowed_state)")
