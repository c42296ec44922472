"""The two cost-sensitive losses shared by COG, ACOG, SACOG and SSACOG.

With ``rho_y = rho`` for ``y = +1`` and ``rho_y = 1`` for ``y = -1``:

- loss I (uneven margin):  ``l = max(0, rho_y - y (mu . x))``,    gradient ``g = -y x``;
- loss II (uneven slope):  ``l = rho_y max(0, 1 - y (mu . x))``, gradient ``g = -rho_y y x``.

Both gradients are ``g = -c y x``; :func:`cost_sensitive_loss` returns ``(l, c)`` so each
update can be written once for both losses.
"""

from __future__ import annotations

from enum import IntEnum

from ..jit_cache import kernel


class Loss(IntEnum):
    """Which cost-sensitive loss; ``Loss["II"]`` from the parameter's spelling.

    Params records hold it as a plain ``int`` (``int(Loss.II)``) and kernels compare it with
    the members, which numba folds to constants: numba types an ``IntEnum`` *argument* in
    about 30 us a call (it inspects the whole enum every time), a plain int in nanoseconds,
    and a single ``learn`` costs under 20 us."""

    I = 1  # noqa: E741 - the paper's name
    II = 2


@kernel
def cost_sensitive_loss(kind: int, y: int, score: float, rho: float) -> tuple[float, float]:
    """``(loss, c)`` with the gradient ``g = -c y x`` when ``loss > 0``; ``kind`` is a :class:`Loss`."""
    rho_y = rho if y > 0 else 1.0
    margin = y * score
    if kind == Loss.I:
        return max(0.0, rho_y - margin), 1.0
    return rho_y * max(0.0, 1.0 - margin), rho_y
