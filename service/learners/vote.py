"""How the default ensemble (:class:`~service.learners.ensemble.EtaGrid`) asks its members for their
scores, and the entry its members append to a vector.

A prediction needs every member's score on its input form's kernel vector (the vote weighs their
margins, :mod:`service.learners.hedge`). A member whose score is ``w . x`` (the kernel
:func:`~service.learners.first_order.linear_score` behind the contract's own ``score_checked``: the
linear family) is asked together with the other linear members of its input form, in one compiled
call (:func:`~service.learners.first_order.linear_scores`: the same ``sparse_dot`` sums in the same
order, so the same bits); the quadratic family of an input form likewise, the quadratic map made once
for all of them (:func:`~service.learners.feature_maps.quadratic_scores`: the same map and the same
``dense_dot`` sums as each member's own score). Their weight vectors go as a plain tuple of arrays
of a fixed width (:data:`~service.learners.first_order.LINEAR_SCORES_WIDTH`, padded; a longer family
goes in several calls), which numba types from its fingerprint, so that one compiled specialisation
serves every roster. Every other member (the forest, the nearest neighbours) is asked on its own.
A roster of linear members over the L2 form alone (the default above ``d = 64``) has its whole vote
made in one compiled call (:meth:`MemberScores.l2_vote`), from the request's canonical vector.

:class:`MemberScores` holds positions only, never members: the ensemble passes its current members
on each call (``load_state`` and a schema migration replace them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from ..jit_cache import kernel
from ..normalization import unit_l2_kernel_vector
from .base import Learner
from .feature_maps import quadratic_score, quadratic_scores
from .first_order import LINEAR_SCORES_WIDTH, linear_score, linear_scores
from .hedge import hedge_vote
from .inputs import SparseVector
from .interface import state_epoch


class Call(NamedTuple):
    """One compiled call: the input form, the members' positions (and the same as the array the
    kernel writes through), and whether they are quadratic members (else linear)."""

    form: str
    ks: list[int]
    at: np.ndarray
    quadratic: bool


class MemberScores:
    """The members' scores, the linear and quadratic ones a call at a time; see the module docstring."""

    _entries: dict[str, tuple[Learner, tuple[int, float]]]
    _weights: list[tuple[np.ndarray, ...]]
    _weights_of: tuple[Sequence[Learner] | None, int]

    def __init__(self, members: Sequence[Learner], forms: Sequence[str]) -> None:
        groups: dict[tuple[str, str], list[int]] = {}
        self.alone: list[tuple[int, str]] = []
        """The members asked on their own, with their input forms."""
        for k, (member, form) in enumerate(zip(members, forms, strict=True)):
            cls = type(member)
            plain = cls.score_checked is Learner.score_checked  # not overridden
            score = getattr(cls, "kernels", (None,))[0]
            if plain and score is linear_score:
                groups.setdefault(("linear", form), []).append(k)
            elif plain and score is quadratic_score:  # one family: one layout, whatever the schema
                groups.setdefault(("quadratic", form), []).append(k)
            else:
                self.alone.append((k, form))
        width = LINEAR_SCORES_WIDTH
        self.calls: list[Call] = []
        """The linear and quadratic members, in calls of at most ``LINEAR_SCORES_WIDTH`` of one
        input form (and one layout)."""
        for (kind, form), ks in groups.items():
            for i in range(0, len(ks), width):
                chunk = ks[i : i + width]
                self.calls.append(Call(form, chunk, np.array(chunk, dtype=np.int64), kind == "quadratic"))
        self.in_calls = np.array(sorted(k for call in self.calls for k in call.ks), dtype=np.int64)
        """The positions of the members in calls, ascending."""
        one = self.calls[0] if len(self.calls) == 1 else None
        all_l2_linear = one is not None and one.form == "l2" and not one.quadratic and not self.alone
        self.l2_linear = one if all_l2_linear else None
        """The one call of a roster of linear members only, all over the L2 form (the default above
        ``d = 64``): :meth:`l2_vote` makes its whole vote in one compiled call."""
        self.forget()

    @staticmethod
    def _nothing_kept() -> dict[str, Any]:
        return {"_entries": {}, "_weights": [], "_weights_of": (None, -1)}

    def forget(self) -> None:
        """Drop what is kept of the members (their weight vectors, their appended entries): the
        roster was replaced."""
        self.__dict__.update(self._nothing_kept())

    def __getstate__(self) -> dict[str, Any]:
        """A copy (pickle, deepcopy) keeps the positions only; what it keeps of the members is made
        again from the copy's own."""
        return {**self.__dict__, **self._nothing_kept()}

    def weights(self, members: Sequence[Learner]) -> list[tuple[np.ndarray, ...]]:
        """Each call's padded weight vectors (:func:`_padded_weights`), in the order of
        :attr:`calls`, made again only once the roster or the process's
        :func:`~service.learners.interface.state_epoch` moved: until then every member updates the
        same arrays in place."""
        epoch = state_epoch()
        source, at = self._weights_of
        if source is not members or at != epoch:
            self._weights = [_padded_weights(members, call.ks) for call in self.calls]
            self._weights_of = (members, epoch)
        return self._weights

    def entry_of(self, member: Learner, form: str = "l2") -> tuple[int, float]:
        """:func:`appended_entry` of ``member``, the first member of input ``form``, kept until another
        member asks for that form (members replaced)."""
        held = self._entries.get(form)
        if held is None or held[0] is not member:
            held = self._entries[form] = (member, appended_entry(member))
        return held[1]

    def l2_vote(self, members: Sequence[Learner], vector: SparseVector, log_w: np.ndarray) -> float | None:
        """For a roster with :attr:`l2_linear` (members that read no explicit zeros), the hedge vote
        of the members' scores on the L2 kernel vector of the canonical ``vector``, before the
        threshold; else None. One call of :func:`l2_linear_vote`: the bits of the L2 form's kernel,
        :meth:`fill` and :func:`~service.learners.hedge.hedge_vote` one after the other."""
        call = self.l2_linear
        if call is None or members[call.ks[0]].needs_presence:
            return None
        tail, tail_value = self.entry_of(members[call.ks[0]])
        padded, n, row = self.weights(members)[0], len(call.ks), np.empty(len(members))
        return float(l2_linear_vote(vector[0], vector[1], tail, tail_value, padded, n, call.at, log_w, row))

    def fill(self, members: Sequence[Learner], kernels: dict[str, SparseVector], row: np.ndarray) -> None:
        """Every member's score into ``row`` (float64): a call at a time, then those asked alone."""
        self.fill_calls(members, kernels, row)
        for k, form in self.alone:
            row[k] = members[k].score_checked(kernels[form])

    def fill_calls(
        self, members: Sequence[Learner], kernels: dict[str, SparseVector], row: np.ndarray
    ) -> None:
        """The scores of the members in calls (the linear and quadratic families) into ``row``."""
        for (form, ks, at, quadratic), padded in zip(self.calls, self.weights(members), strict=True):
            idx, val = kernels[form]
            if quadratic:
                layout = cast(Any, members[ks[0]]).live_layout()
                quadratic_scores(padded, len(ks), layout, idx, val, at, row)
            else:
                linear_scores(padded, len(ks), idx, val, at, row)


def _padded_weights(members: Sequence[Learner], ks: list[int]) -> tuple[np.ndarray, ...]:
    """The live weights of members ``ks``, padded to :data:`LINEAR_SCORES_WIDTH` with the first."""
    ws = tuple([members[k].live_weights() for k in ks])
    return ws + ws[:1] * (LINEAR_SCORES_WIDTH - len(ws))


def appended_entry(member: Learner) -> tuple[int, float]:
    """The entry ``member.kernel_vector`` appends to every vector, ``(index, value)`` of its
    intercept, or ``(-1, 0.0)`` when it appends none."""
    idx, val = member.kernel_vector((np.empty(0, np.int64), np.empty(0, np.float64)))
    return (int(idx[0]), float(val[0])) if idx.size else (-1, 0.0)


@kernel
def l2_linear_vote(
    idx: np.ndarray, val: np.ndarray, tail: int, tail_value: float, ws: Any, n: int, at: np.ndarray,
    log_w: np.ndarray, row: np.ndarray,
) -> float:  # fmt: skip
    """``hedge_vote(log_w, row)`` once ``row[at[k]] = ws[k] . x`` for ``k < n``, ``x`` the L2 kernel
    vector of ``(idx, val)`` (:func:`~service.normalization.unit_l2_kernel_vector` with the entry
    ``(tail, tail_value)``): the three kernels in one call, the same operations in the same order."""
    ki, kv = unit_l2_kernel_vector(idx, val, tail, tail_value)
    linear_scores(ws, n, ki, kv, at, row)
    return hedge_vote(log_w, row)
