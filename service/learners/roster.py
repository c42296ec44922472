"""Which members an ``eta="auto"`` ensemble runs: families of learners, input forms, and the rule by
``d`` that keeps large (sparse) models cheap.

A *family* is a registered learner and options. Families with a learning rate and a loss (linear
ACOG, ACOG-diag over the quadratic features) *span the grid*: one member per ``(loss, eta)``.
Families without one (the forest) give one member. Every family runs once per input form
(:mod:`service.learners.member_inputs`): per-example L2 (``"l2"``) and online standardisation
(``"standard"``), or ``"raw"`` alone when the model normalises its requests itself.

The rule (``members``; a model's ``auto_members``):

- ``"linear"``: the linear family only;
- ``"all"``: the linear family, and the quadratic one for ``d <= NONLINEAR_MAX_FEATURES`` (32);
- ``"auto"`` (the default): ``"all"``, and the forest for ``d <= FOREST_MAX_FEATURES`` (64) when
  its members, every tree at its full node budget, fit the memory budget (46 MiB a forest at
  ``d = 64``; else the forest is left out), and the nearest neighbours (``knn``) for
  ``d <= NEIGHBOURS_MAX_FEATURES`` on the input forms of ``NEIGHBOURS_OPTIONS["inputs"]`` when their
  buffers fit the memory budget.

Input forms (``inputs``; a model's ``normalize: "auto"``): ``"l2"`` always, ``"standard"`` for
``d <= STANDARD_MAX_FEATURES`` (64) only: standardisation makes a sparse ``x`` dense (every
feature moves off its mean), which for a wide sparse model would turn ``O(nnz)`` work into
``O(d)`` and double the members.
"""

from __future__ import annotations

from typing import Any

from .base import Learner
from .covariance import check_sigma_fits
from .errors import InvalidParameter
from .nonlinear import FOGD, Quadratic, check_map_fits, mapped_dimension

Family = tuple[type[Learner], dict[str, Any]]
NONLINEAR_MAX_FEATURES = 32
"""The quadratic family joins for ``d <=`` this."""
FOREST_MAX_FEATURES = 64
"""The forest joins for ``d <=`` this."""
STANDARD_MAX_FEATURES = 64
"""Online standardisation is an input form for ``d <=`` this."""
MEMBERS = ("linear", "all", "auto")
NONLINEAR_FAMILIES: tuple[Family, ...] = ((Quadratic, {"update": "acog-diag"}),)
"""Random Fourier features (``FOGD``, ``D = 200``) are left out: at ``d <= 16`` they cost 5x the
quadratic family per label (``200 d`` cosines and products against ``d^2 / 2`` products)."""
RFF_FAMILY: Family = (FOGD, {"update": "acog-diag", "n_components": 200, "seed": 0})
FOREST = "amf"
"""The registered name of the forest learner."""
FOREST_OPTIONS: dict[str, Any] = {}
"""Options of the forest member (its own defaults otherwise)."""
NEIGHBOURS = "knn"
"""The registered name of the nearest-neighbour learner."""
NEIGHBOURS_MAX_FEATURES = 64
"""The nearest neighbours join for ``d <=`` this (a prediction costs O(window x d))."""
NEIGHBOURS_OPTIONS: dict[str, Any] = {"inputs": ("standard",)}
"""Options of the nearest-neighbour members (their own defaults otherwise); ``inputs``: the input
forms they run on, among the model's (all of the model's when it has none of them)."""


def check_members(members: Any) -> str:
    if members not in MEMBERS:
        raise InvalidParameter("members", f"must be one of {', '.join(map(repr, MEMBERS))}, got {members!r}")
    return str(members)


def families_for(members: Any, n_features: int) -> tuple[Family, ...]:
    """The nonlinear families spanning the grid for ``members`` at dimension ``d``."""
    members = check_members(members)
    return NONLINEAR_FAMILIES if members != "linear" and n_features <= NONLINEAR_MAX_FEATURES else ()


def forests_for(
    members: Any, n_features: int, params: dict[str, Any] | None = None, copies: int = 1
) -> tuple[Family, ...]:
    """The families without a learning rate for ``members="auto"``: the forest at
    ``d <= FOREST_MAX_FEATURES`` and the nearest neighbours at ``d <= NEIGHBOURS_MAX_FEATURES``, each
    if registered and if its ``copies`` members (at most one per input form), at their full size
    (:meth:`full_nbytes`), fit the memory budget of ``params`` (the learner's; the default budget
    without one)."""
    members = check_members(members)
    if members != "auto":
        return ()
    rule = (
        (FOREST, FOREST_MAX_FEATURES, FOREST_OPTIONS),
        (NEIGHBOURS, NEIGHBOURS_MAX_FEATURES, NEIGHBOURS_OPTIONS),
    )
    return tuple(
        family for name, top, options in rule if n_features <= top
        for family in _fitting(name, n_features, params or {}, options, copies)
    )  # fmt: skip


def _fitting(
    name: str, n_features: int, params: dict[str, Any], options: dict[str, Any], copies: int
) -> tuple[Family, ...]:
    """``(ALGORITHMS[name], options)`` if registered and ``copies`` members fit the memory budget."""
    from . import ALGORITHMS  # the registry imports this module

    cls = ALGORITHMS.get(name)
    copies = min(copies, len(options.get("inputs", ()))) or copies  # members on some of the forms only
    if cls is None or copies * full_nbytes(cls, n_features, {**params, **options}) > budget_of(params):
        return ()
    return ((cls, dict(options)),)


def full_nbytes(cls: type[Learner], n_features: int, params: dict[str, Any]) -> int:
    """The most memory one member of ``cls`` with ``params`` takes (its ``full_nbytes``)."""
    size = getattr(cls, "full_nbytes", None)
    if size is None:
        raise TypeError(f"{cls.__name__} declares no full_nbytes: it cannot be a member without a rate")
    return int(size(n_features, params))


def check_family_fits(cls: type[Learner], n_features: int, params: dict[str, Any], copies: int) -> None:
    """Refuse (by name) a family whose ``copies`` members' arrays exceed the memory budget."""
    spec = cls.param_spec()
    if "memory_budget" not in spec:
        return
    dim = n_features + (1 if params.get("fit_intercept") else 0)
    budget = params.get("memory_budget", spec["memory_budget"][0])
    if "update" not in spec:
        check_sigma_fits(cls.algorithm, dim, budget, copies=copies)
        return
    check_map_fits(cls.algorithm, n_features, params, copies=copies)  # a map's learner
    if params.get("update") == "acog":
        dim += mapped_dimension(cls.algorithm, n_features, params) - n_features
        check_sigma_fits(f"{cls.algorithm} (update acog)", dim, budget, copies=copies)


def check_forests_fit(cls: type[Learner], n_features: int, params: dict[str, Any], copies: int) -> None:
    """Refuse (by name) members without a rate (the forest, the neighbours) whose ``copies``, at their
    full size, exceed the memory budget."""
    need, budget = copies * full_nbytes(cls, n_features, params), budget_of(params)
    if need > budget:
        raise InvalidParameter(
            "n_features",
            f"{copies} {cls.algorithm} members of {n_features} features take {need / 2**20:.1f} MiB at full "
            f'size, over the memory budget of {budget / 2**20:.1f} MiB: auto_members "all"',
        )


def budget_of(params: dict[str, Any]) -> int:
    from .covariance import DEFAULT_MEMORY_BUDGET

    return int(params.get("memory_budget", DEFAULT_MEMORY_BUDGET))


def forms_for(normalize: str, n_features: int) -> tuple[str, ...]:
    """The input forms of a model whose ``normalize`` is ``"auto"`` (the ensemble normalises):
    L2, and standardisation for ``d <= STANDARD_MAX_FEATURES``; otherwise ``("raw",)``."""
    if normalize != "auto":
        return ("raw",)
    return ("l2", "standard") if n_features <= STANDARD_MAX_FEATURES else ("l2",)


def family_name(family: Family) -> str:
    """``"quadratic/acog-diag"``: the map's learner and the learner over the map; a forest's name."""
    cls, options = family
    if "update" not in cls.param_spec():
        return cls.algorithm
    return f"{cls.algorithm}/{options.get('update', 'ogd')}"
