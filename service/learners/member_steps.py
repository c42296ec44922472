"""How the default ensemble (:class:`~service.learners.ensemble.EtaGrid`) takes a label: the
members of one learner class over one input form step in one compiled call.

Every member learns every label on its input form's kernel vector. A member whose round is the
contract's own (:meth:`Learner.learn_checked` not overridden: the linear and the quadratic
families) is, alone, one numba call of a few microseconds, most of it the dispatcher typing and
unboxing the member's arrays. :class:`MemberSteps` steps the members of one class and one input
form together, through the class's :attr:`~service.learners.driver.Entries.learn_many`: a typed list
of their ``(arrays, params, rho)`` records, which holds the members' own arrays (the steps change
them in place, as each member's own call does), is built once
(:func:`~service.learners.driver.learner_group`) and reused while every member keeps the same
records; a member whose state was replaced (``load_state``) or a roster that changed makes it build
the list again. The steps are :func:`~service.learners.driver.learn_one`'s, in member order, on the
same vector: the same bits as one call per member. Members of other classes (the forest, the nearest
neighbours) and a group whose records are not of one type step on their own.

Like :class:`~service.learners.vote.MemberScores`, this holds positions only, never members: the
ensemble passes its current members on each call.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_
from typing import Any, NamedTuple

import numba
import numpy as np

from .base import Learner
from .driver import learner_group
from .first_order import LINEAR_SCORES_WIDTH
from .inputs import SparseVector

GROUP_WIDTH = LINEAR_SCORES_WIDTH
"""The records one :func:`~service.learners.driver.learner_group` call takes (padded): one tuple
length, one compiled specialisation per class. A longer group steps in several calls."""


class Outcomes(NamedTuple):
    """Every member's outcome of one round, by position: score, loss, updated, rho."""

    scores: np.ndarray
    losses: np.ndarray
    updated: np.ndarray
    rhos: np.ndarray

    @classmethod
    def empty(cls, n: int) -> Outcomes:
        return cls(np.empty(n), np.empty(n), np.empty(n, dtype=np.bool_), np.empty(n))

    def put(self, k: int, outcome: tuple[Any, Any, Any, Any]) -> None:
        """Member ``k``'s ``(score, loss, updated, rho)``."""
        self.scores[k], self.losses[k], self.updated[k], self.rhos[k] = outcome


class _Group:
    """One compiled call: members ``ks`` (one class, one input form), and the typed list of their
    records with the members and state tuples it was built from (``group`` None: not built yet, or
    ``uniform`` false: the records are not of one numba type)."""

    __slots__ = ("at", "flats", "form", "group", "ks", "members", "uniform")

    def __init__(self, form: str, ks: list[int]) -> None:
        self.form = form
        self.ks = ks
        self.at = np.array(ks, dtype=np.int64)
        self.members: list[Learner] = []
        self.flats: list[tuple[np.ndarray, ...]] = []
        self.group: Any = None
        self.uniform = True

    def __getstate__(self) -> tuple[str, list[int]]:
        """A copy (pickle, deepcopy) keeps the positions only: its typed list, which holds the
        arrays of the members it was built from, is built again from the copy's own members."""
        return self.form, self.ks

    def __setstate__(self, state: tuple[str, list[int]]) -> None:
        self.__init__(*state)  # type: ignore[misc]


class MemberSteps:
    """The members' rounds, a class and an input form a call at a time; see the module docstring."""

    def __init__(self, members: Sequence[Learner], forms: Sequence[str]) -> None:
        by_class: dict[tuple[str, type], list[int]] = {}
        self.alone: list[tuple[int, str]] = []
        """The members that step on their own, with their input forms."""
        for k, (member, form) in enumerate(zip(members, forms, strict=True)):
            if type(member).learn_checked is Learner.learn_checked:  # the contract's own round
                by_class.setdefault((form, type(member)), []).append(k)
            else:
                self.alone.append((k, form))
        self._groups: list[_Group] = []
        for (form, _), ks in by_class.items():
            if len(ks) == 1:
                self.alone.append((ks[0], form))
                continue
            for i in range(0, len(ks), GROUP_WIDTH):
                chunk = ks[i : i + GROUP_WIDTH]
                if len(chunk) == 1:
                    self.alone.append((chunk[0], form))
                else:
                    self._groups.append(_Group(form, chunk))
        self.alone.sort()

    def step(
        self, members: Sequence[Learner], kernels: dict[str, SparseVector], label: int, out: Outcomes
    ) -> None:
        """One round of every member on its form's kernel vector, each outcome into ``out``: the
        grouped members a call per group, then the others (``learn_kernel`` when their round is the
        contract's own, else ``learn_checked``)."""
        for g in self._groups:
            group = self._group_of(g, members)
            idx, val = kernels[g.form]
            if group is None:  # records of more than one type: one call each
                for k in g.ks:
                    out.put(k, members[k].learn_kernel((idx, val), label))
                continue
            entry = members[g.ks[0]]._entries.learn_many
            entry(group, idx, val, label, g.at, out.scores, out.losses, out.updated, out.rhos)
        for k, form in self.alone:
            member = members[k]
            if type(member).learn_checked is Learner.learn_checked:
                out.put(k, member.learn_kernel(kernels[form], label))
            else:
                info = member.learn_checked(kernels[form], label)
                out.put(k, (info.score, info.loss, info.updated, info.rho))

    @staticmethod
    def _group_of(g: _Group, members: Sequence[Learner]) -> Any:
        """The typed list of ``g``'s members' records, built again when a member or its state tuple
        changed (a member's params and rho records are fixed when it is made); None when the
        records are not of one numba type. Refuses, as each member's own step would, when a
        member's state is borrowed."""
        ms = [members[k] for k in g.ks]
        for m in ms:
            if m._borrows:
                m._refuse_if_borrowed()
        flats = [m._flat for m in ms]
        if len(ms) == len(g.members) and all(map(is_, ms, g.members)) and all(map(is_, flats, g.flats)):
            return g.group if g.uniform else None
        g.members, g.flats = ms, flats
        records = [(m._flat, m._flat_params, m._flat_rho) for m in ms]
        g.uniform = len({numba.typeof(record) for record in records}) == 1
        if not g.uniform:
            g.group = None
            return None
        padded = tuple(records) + (records[0],) * (GROUP_WIDTH - len(records))
        g.group = learner_group(padded, len(records))
        return g.group
