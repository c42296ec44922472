"""Every learner of the ACOG paper behind one contract, by name.

>>> import numpy as np
>>> from service.learners import create
>>> learner = create("acog", n_features=2, loss="II", eta=100.0, gamma=1.0, rho=2.333)
>>> info = learner.learn(np.array([0.6, 0.8]), +1)
>>> (info.updated, learner.predict(np.array([0.6, 0.8])))
(True, 1)

Names: ``perceptron``, ``pa1``, ``paum``, ``cpapb``, ``romma``, ``arow``, ``cog``,
``acog``, ``acog-diag``, ``sacog``, ``ssacog`` (the ``-I``/``-II`` suffix of the paper is
the ``loss`` parameter). The contract is documented in :mod:`service.learners.base`.
"""

from __future__ import annotations

from typing import Any

from .acog import ACOG, ACOGDiag
from .arow import AROW
from .base import Learner, StreamResult, UpdateInfo
from .errors import InvalidInput, InvalidParameter
from .first_order import COG, CPAPB, PA1, PAUM, ROMMA, Perceptron
from .sketch import SACOG, SSACOG

ALGORITHMS: dict[str, type[Learner]] = {
    cls.algorithm: cls
    for cls in (Perceptron, PA1, PAUM, CPAPB, ROMMA, AROW, COG, ACOG, ACOGDiag, SACOG, SSACOG)
}


def create(algorithm: str, n_features: int, **params: Any) -> Learner:
    """A fresh learner. Raises :class:`InvalidParameter` (a ``ValueError``) naming the
    parameter for an unknown algorithm or parameter, or a value out of range."""
    try:
        cls = ALGORITHMS[algorithm]
    except (KeyError, TypeError):
        raise InvalidParameter(
            "algorithm", f"unknown algorithm {algorithm!r} (known: {', '.join(ALGORITHMS)})"
        ) from None
    return cls(n_features, **params)


__all__ = [
    "ALGORITHMS",
    "InvalidInput",
    "InvalidParameter",
    "Learner",
    "StreamResult",
    "UpdateInfo",
    "create",
]
