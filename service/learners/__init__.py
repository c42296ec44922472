"""Every learner of the ACOG paper behind one contract, by name.

>>> import numpy as np
>>> from service.learners import create
>>> learner = create("acog", n_features=2, loss="II", eta=100.0, gamma=1.0, rho=2.333)
>>> info = learner.learn(np.array([0.6, 0.8]), +1)
>>> (info.updated, learner.predict(np.array([0.6, 0.8])))
(True, 1)

Names: ``perceptron``, ``pa1``, ``paum``, ``cpapb``, ``romma``, ``arow``, ``cog``,
``acog``, ``acog-diag``, ``sacog``, ``ssacog``, ``oli2ds`` (the ``-I``/``-II`` suffix of the paper is
the ``loss`` parameter), ``opid`` (Hou & Zhou: a model that survives a declared change of
feature schema, :mod:`service.learners.opid`), SDROGD's ``sdrogd`` and ``pegasos``, and the nonlinear
``quadratic``, ``fogd`` and ``nogd`` (:mod:`service.learners.nonlinear`), the forest ``amf``
(:mod:`service.learners.forest`) and the nearest neighbours ``knn`` (:mod:`service.learners.knn`). The
contract, and the recipe for adding an algorithm, are in :mod:`service.learners.base`;
:func:`warm_up` compiles the kernels a set of learners needs. Importing this package does no
I/O: the process chooses the kernels' disk cache (:func:`service.jit_cache.configure`) before
importing it.
"""

from __future__ import annotations

from typing import Any

from .acog import ACOG, ACOGDiag
from .arow import AROW
from .base import Learner, OnlineLearner, StreamResult, UpdateInfo, register
from .ensemble import DEFAULT_GRID, EtaGrid
from .errors import InvalidInput, InvalidParameter, StateBorrowed
from .first_order import COG, CPAPB, PA1, PAUM, ROMMA, Perceptron
from .forest.learner import AMF
from .knn import KNN
from .nonlinear import FOGD, NOGD, Quadratic
from .oli2ds import OLI2DS
from .opid.learner import OPID
from .roster import NONLINEAR_MAX_FEATURES, families_for, forests_for
from .sdrogd import SDROGD, Pegasos
from .sketch import SACOG, SSACOG
from .warm_up import WarmUp, warm_up

ALGORITHMS: dict[str, type[Learner]] = register(
    [
        *(Perceptron, PA1, PAUM, CPAPB, ROMMA, AROW, COG, ACOG, ACOGDiag, SACOG, SSACOG, OLI2DS, OPID),
        *(SDROGD, Pegasos),  # docs/learners.md §8
        *(Quadratic, FOGD, NOGD),  # the nonlinear members
        AMF,  # the Aggregated Mondrian Forest (service.learners.forest)
        KNN,  # the k nearest neighbours over a window (service.learners.knn)
    ]
)
"""Every algorithm by name: the one place a new learner is registered."""


ENSEMBLE_PARAMS = ("eta_grid", "objective", "c_p", "selection", "window", "members", "inputs")


def create(algorithm: str, n_features: int, **params: Any) -> OnlineLearner:
    """A fresh learner. Raises :class:`InvalidParameter` (a ``ValueError``) naming the
    parameter for an unknown algorithm or parameter, or a value out of range.

    ``eta="auto"`` gives an :class:`EtaGrid` over ``eta_grid`` (default
    ``{0.3, 1, 3, 10, 30}``) that follows the member with the best running
    ``objective`` (``"sum"`` with ``alpha_p`` or ``"cost"`` with ``c_p``), over all labels
    (``selection="leader"``) or the last ``window`` ones (``selection="window"``).
    ``loss="auto"`` adds members for both losses (II first, then I). ``members="all"`` adds
    the quadratic family (ACOG-diag over the quadratic features) for ``n_features <=
    NONLINEAR_MAX_FEATURES``, ``members="auto"`` the forest too, by the rule of
    :mod:`service.learners.roster`; ``inputs`` the input forms (``["l2", "standard"]``, say; default
    ``["raw"]``, the input as given).
    """
    try:
        cls = ALGORITHMS[algorithm]
    except (KeyError, TypeError):
        raise InvalidParameter(
            "algorithm", f"unknown algorithm {algorithm!r} (known: {', '.join(ALGORITHMS)})"
        ) from None
    if params.get("loss") == "auto" and "eta" not in cls.param_spec() and "loss" in cls.param_spec():
        raise InvalidParameter("loss", f'"auto" needs an eta grid, which {algorithm} has not: "I" or "II"')
    if params.get("eta") == "auto" or params.get("loss") == "auto":
        options = {k: params.pop(k) for k in ENSEMBLE_PARAMS if k in params}
        eta = params.pop("eta", "auto")
        grid = options.pop("eta_grid", DEFAULT_GRID) if eta == "auto" else (eta,)
        losses = ("II", "I") if params.get("loss") == "auto" else None
        if losses is not None:
            del params["loss"]
        alpha_p = params.pop("alpha_p", 0.5)
        members = options.pop("members", "linear")
        copies = len(options.get("inputs", ("raw",)))
        families, forests = (
            families_for(members, n_features),
            forests_for(members, n_features, params, copies),
        )
        return EtaGrid(
            cls, n_features, grid=grid, alpha_p=alpha_p, losses=losses, families=families, forests=forests,
            **options, **params,
        )  # fmt: skip
    stray = [k for k in ENSEMBLE_PARAMS if k in params and k not in cls.param_spec()]  # knn has a window
    if stray:
        raise InvalidParameter(stray[0], 'only applies with eta="auto"')
    return cls(n_features, **params)


__all__ = [
    "ALGORITHMS",
    "DEFAULT_GRID",
    "NONLINEAR_MAX_FEATURES",
    "EtaGrid",
    "InvalidInput",
    "InvalidParameter",
    "Learner",
    "OnlineLearner",
    "StateBorrowed",
    "StreamResult",
    "UpdateInfo",
    "WarmUp",
    "create",
    "warm_up",
]
