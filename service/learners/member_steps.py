"""How the default ensemble (:class:`~service.learners.ensemble.EtaGrid`) takes a label: the
members of one learner class over one input form step in one compiled call.

Every member learns every label on its input form's kernel vector. A member whose round is the
contract's own (:meth:`Learner.learn_checked` not overridden: the linear and the quadratic
families) is, alone, one numba call of a few microseconds, most of it the dispatcher typing and
unboxing the member's arrays. :class:`MemberSteps` steps the members of one class and one input
form together, through the class's :attr:`~service.learners.driver.Entries.learn_many`: a typed list
of their ``(arrays, params, rho)`` records, which holds the members' own arrays (the steps change
them in place, as each member's own call does), is built once
(:func:`~service.learners.driver.learner_group`) and reused while the roster and the process's
:func:`~service.learners.interface.state_epoch` stay as they were: a member made, loading a state
or growing, or a borrow taken or given back, makes it build the list again. The steps are
:func:`~service.learners.driver.learn_one`'s, in member order, on the same vector: the same bits as
one call per member. Members of other classes (the forest, the nearest
neighbours), a group whose records are not of one type, and a read-only kernel vector (the raw
input taken as it is: a label log's example without an intercept) step a call each, so that the
grouped step has one compiled specialisation per class: writable vectors.

Like :class:`~service.learners.vote.MemberScores`, this holds positions, not members: the ensemble
passes its current members on each call (a group keeps the roster it was built from only to see
that it is still the same).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .base import Learner
from .driver import learner_group
from .first_order import LINEAR_SCORES_WIDTH
from .inputs import SparseVector
from .interface import state_epoch

Record = tuple[tuple[np.ndarray, ...], tuple[Any, ...], tuple[Any, ...]]
"""A member's ``(arrays, params, rho)``: the plain tuples its own kernel calls take."""

GROUP_WIDTH = LINEAR_SCORES_WIDTH
"""The records one :func:`~service.learners.driver.learner_group` call takes (padded): one tuple
length, one compiled specialisation per class. A longer group steps in several calls."""


def steps_together(cls: type[Learner]) -> bool:
    """Whether the members of ``cls`` step in one compiled call: their round is the contract's own
    kernel round (neither ``learn_checked`` nor ``learn_kernel`` overridden)."""
    return cls.learn_checked is Learner.learn_checked and cls.learn_kernel is Learner.learn_kernel


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
    records with what it was built from: the roster (the sequence of members) and the
    :func:`~service.learners.interface.state_epoch` then (``epoch`` -1: not built; ``group`` None
    once built: the records are not of one numba type)."""

    __slots__ = ("at", "epoch", "form", "group", "ks", "source")

    def __init__(self, form: str, ks: list[int]) -> None:
        self.form = form
        self.ks = ks
        self.at = np.array(ks, dtype=np.int64)
        self.reset()

    def reset(self) -> None:
        """Not built: the next round builds the typed list."""
        self.source: Sequence[Learner] | None = None
        self.epoch = -1
        self.group: Any = None

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
        self.alone: list[tuple[int, str, bool]] = []
        """The members that step on their own: position, input form, and whether they step by
        ``learn_kernel`` (their ``learn_checked`` is the contract's, built on it), else by their own
        ``learn_checked``."""
        for k, (member, form) in enumerate(zip(members, forms, strict=True)):
            cls = type(member)
            if steps_together(cls):
                by_class.setdefault((form, cls), []).append(k)
            else:
                self.alone.append((k, form, cls.learn_checked is Learner.learn_checked))
        self._groups: list[_Group] = []
        for (form, _), ks in by_class.items():
            for i in range(0, len(ks), GROUP_WIDTH):
                chunk = ks[i : i + GROUP_WIDTH]
                if len(chunk) == 1:
                    self.alone.append((chunk[0], form, True))
                else:
                    self._groups.append(_Group(form, chunk))
        self.alone.sort()

    def forget(self) -> None:
        """Drop every group's typed list (and with it the arrays it holds): the roster was replaced,
        whose arrays would otherwise stay alive until the next label."""
        for g in self._groups:
            g.reset()

    def step(
        self, members: Sequence[Learner], kernels: dict[str, SparseVector], label: int, out: Outcomes
    ) -> None:
        """One round of every member on its form's kernel vector, each outcome into ``out``: the
        grouped members a call per group, then the others (``learn_kernel`` when their round is the
        contract's own, else ``learn_checked``)."""
        for g in self._groups:
            idx, val = kernels[g.form]
            # one compiled specialisation per class: a form's kernel vector is a fresh array but for
            # a read-only view taken as it is (raw input, no intercept), which steps a call each
            group = self._group_of(g, members) if idx.flags.writeable and val.flags.writeable else None
            if group is None:  # records of more than one type, or a read-only vector: one call each
                for k in g.ks:
                    out.put(k, members[k].learn_kernel((idx, val), label))
                continue
            entry = members[g.ks[0]]._entries.learn_many
            entry(group, idx, val, label, g.at, out.scores, out.losses, out.updated, out.rhos)
        for k, form, own_round in self.alone:
            member = members[k]
            if own_round:
                out.put(k, member.learn_kernel(kernels[form], label))
            else:
                info = member.learn_checked(kernels[form], label)
                out.put(k, (info.score, info.loss, info.updated, info.rho))

    @staticmethod
    def _group_of(g: _Group, members: Sequence[Learner]) -> Any:
        """The typed list of ``g``'s members' records, built again once the roster or the state
        epoch moved (a member made, loading a state or growing; a borrow taken or given back);
        None when the records are not of one numba type. Refuses, as each member's own step
        would, when a member's state is borrowed."""
        epoch = state_epoch()
        if g.epoch == epoch and g.source is members:
            return g.group
        ms = [members[k] for k in g.ks]
        for m in ms:
            m._refuse_if_borrowed()
        records: list[Record] = [(m._flat, m._flat_params, m._flat_rho) for m in ms]
        if len({_numba_type_key(record) for record in records}) == 1:
            padded = tuple(records) + (records[0],) * (GROUP_WIDTH - len(records))
            g.group = learner_group(padded, len(records))
        else:
            g.group = None
        g.source, g.epoch = members, epoch
        return g.group


def _numba_type_key(record: Record) -> tuple[Any, ...]:
    """What numba's type of a record depends on (each array's dtype, dimensions, layout, writability
    and alignment; each scalar's Python type), read in microseconds where ``numba.typeof`` of a
    tuple takes about a hundred: records with one key are of one numba type (a float and a numpy
    float64 get two keys though numba types both alike, which only sends such a group one by one)."""
    arrays, params, rho = record
    flags = tuple(
        (a.dtype, a.ndim, a.flags.c_contiguous, a.flags.f_contiguous, a.flags.writeable, a.flags.aligned)
        for a in arrays
    )
    return flags, tuple(map(type, params)), tuple(map(type, rho))
