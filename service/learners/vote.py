"""How the default ensemble (:class:`~service.learners.ensemble.EtaGrid`) asks its members for their
scores, and the entry its members append to a vector.

A prediction needs every member's score on its input form's kernel vector (the vote weighs their
margins, :mod:`service.learners.hedge`). A member whose score is ``w . x`` (the kernel
:func:`~service.learners.first_order.linear_score` behind the contract's own ``score_checked``: the
linear family) is asked together with the other linear members of its input form, in one compiled
call (:func:`~service.learners.first_order.linear_scores`: the same ``sparse_dot`` sums in the same
order, so the same bits). Their weight vectors go as a
plain tuple of arrays of a fixed width (:data:`~service.learners.first_order.LINEAR_SCORES_WIDTH`,
padded; a longer family goes in several calls), which numba types from its fingerprint, so that one
compiled specialisation serves every roster. Every other member (the quadratic family, the forest,
the nearest neighbours) is asked on its own.

:class:`MemberScores` holds positions only, never members: the ensemble passes its current members
on each call (``load_state`` and a schema migration replace them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import Learner
from .first_order import LINEAR_SCORES_WIDTH, linear_score, linear_scores
from .inputs import SparseVector

Call = tuple[str, list[int], np.ndarray]
"""One compiled call: the input form, the members' positions, and the same as the array the kernel
writes through."""


class MemberScores:
    """The members' scores, the linear ones a call at a time; see the module docstring."""

    def __init__(self, members: Sequence[Learner], forms: Sequence[str]) -> None:
        linear: dict[str, list[int]] = {}
        self.alone: list[tuple[int, str]] = []
        """The members asked on their own, with their input forms."""
        for k, (member, form) in enumerate(zip(members, forms, strict=True)):
            cls = type(member)
            plain = cls.score_checked is Learner.score_checked  # not overridden
            if plain and getattr(cls, "kernels", (None,))[0] is linear_score:
                linear.setdefault(form, []).append(k)
            else:
                self.alone.append((k, form))
        width = LINEAR_SCORES_WIDTH
        chunks = [(f, ks[i : i + width]) for f, ks in linear.items() for i in range(0, len(ks), width)]
        self.calls: list[Call] = [(form, ks, np.array(ks, dtype=np.int64)) for form, ks in chunks]
        """The linear members, in calls of at most ``LINEAR_SCORES_WIDTH`` of one input form."""
        self._call_of: list[Call | None] = [None] * len(members)
        for call in self.calls:
            for k in call[1]:
                self._call_of[k] = call

    def fill(self, members: Sequence[Learner], kernels: dict[str, SparseVector], row: np.ndarray) -> None:
        """Every member's score into ``row`` (float64)."""
        for call in self.calls:
            _ask_call(members, call, kernels, row)
        for k, form in self.alone:
            row[k] = members[k].score_checked(kernels[form])

    def ask(
        self, members: Sequence[Learner], k: int, form: str, kernels: dict[str, SparseVector], row: np.ndarray
    ) -> None:
        """Member ``k``'s score into ``row`` (``form``: its input form, whose kernel vector must be in
        ``kernels``); a linear member's whole call answers at once."""
        call = self._call_of[k]
        if call is None:
            row[k] = members[k].score_checked(kernels[form])
        else:
            _ask_call(members, call, kernels, row)


def _ask_call(
    members: Sequence[Learner], call: Call, kernels: dict[str, SparseVector], row: np.ndarray
) -> None:
    form, ks, at = call
    idx, val = kernels[form]
    ws = tuple([members[k].live_weights() for k in ks])
    linear_scores(ws + ws[:1] * (LINEAR_SCORES_WIDTH - len(ws)), len(ws), idx, val, at, row)


def appended_entry(member: Learner) -> tuple[int, float]:
    """The entry ``member.kernel_vector`` appends to every vector, ``(index, value)`` of its
    intercept, or ``(-1, 0.0)`` when it appends none."""
    idx, val = member.kernel_vector((np.empty(0, np.int64), np.empty(0, np.float64)))
    return (int(idx[0]), float(val[0])) if idx.size else (-1, 0.0)
