"""The checks of a learner's parameters: each returns the normalised value or raises
:class:`~service.learners.errors.InvalidParameter` naming the parameter.

A learner declares its parameters as ``{name: (default, check)}`` (``PARAMS`` of
:class:`~service.learners.base.Learner`); :data:`COMMON_PARAMS` are every learner's, and
:data:`COST_PARAMS` those of the learners that weigh the classes. This module imports nothing of
the learners but their errors, so that any of them (the base included) can use it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import InvalidParameter


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
