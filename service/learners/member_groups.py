"""A composite learner's members stepped and scored a chunk at a time: one compiled call for up to
:data:`CHUNK` members of one family over one input form.

The members of an ensemble that share a state type and an input form (the ten ACOG members over L2
input of the default: five rates times two losses) read the same vector. Each used to cost its own
Python call into its kernel, about as long as the kernel itself at moderate ``d``. A *chunk* of
:data:`CHUNK` consecutive such members goes to its type's group entry points instead
(:class:`~service.learners.driver.Entries` ``score_group``/``learn_group``): the tuple of their
plain state tuples, one call, and inside it the same machine code per member on the same arrays
as :meth:`Learner.score_checked` and :meth:`Learner.learn_checked` run, so the same bits.

Numba compiles a group entry point once per tuple *length*, so the length is fixed: every chunk
holds exactly :data:`CHUNK` members, the length of the default rate grid (a grid of other length
leaves the rest to single calls), and the warm-up compiles it for each algorithm
(:func:`warm_up_chunk`). The vector is made writable first when it is not (the label log's
examples are read-only views), so that one specialisation serves every call.

What runs alone, one call per member: a member whose ``score_checked`` or ``learn_checked`` is its
own (the forest grows its node arrays first), the members left over from a family's chunks, and a
run whose states numba would not type as one tuple type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numba
import numpy as np

from .base import Learner
from .driver import Entries
from .inputs import SparseVector

CHUNK = 5
"""Members per compiled call: the length of the default rate grid."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """Members ``start .. stop - 1``: :data:`CHUNK` learners of one type over input ``form``."""

    start: int
    stop: int
    form: str
    entries: Entries


def plain(member: Learner) -> bool:
    """Whether ``member`` scores and learns by the contract's own methods (its kernels alone)."""
    cls = type(member)
    return cls.score_checked is Learner.score_checked and cls.learn_checked is Learner.learn_checked


class MemberGroups:
    """The chunks and the single members of one roster (``members[k]`` reads input ``forms[k]``).

    Built for one list of members (:attr:`members`): a composite rebuilds it when it replaces the
    list (a restored state, a migration); the states themselves are read at every call."""

    def __init__(self, members: list[Learner], forms: Sequence[str]) -> None:
        self.members = members
        self.forms = list(forms)
        self.chunks: list[Chunk] = []
        self.singles: list[int] = []
        k, n = 0, len(members)
        while k < n:
            stop = k + CHUNK
            run = members[k:stop]
            if stop <= n and _one_kind(run, self.forms[k:stop]):
                self.chunks.append(Chunk(k, stop, self.forms[k], run[0]._entries))
                k = stop
            else:
                self.singles.append(k)
                k += 1

    def score(self, kernels: Mapping[str, SparseVector], out: np.ndarray) -> None:
        """``out[k]`` = member ``k``'s ``mu . x`` on its form's kernel vector (float64, ``(K,)``)."""
        members = self.members
        for c in self.chunks:
            idx, val = _writable(kernels[c.form])
            states = tuple([members[k]._flat for k in range(c.start, c.stop)])
            c.entries.score_group(states, idx, val, out[c.start : c.stop])
        for k in self.singles:
            out[k] = members[k].score_checked(kernels[self.forms[k]])

    def learn(self, kernels: Mapping[str, SparseVector], y: int, out: np.ndarray) -> None:
        """One round for every member; ``out[k]`` = ``(score, loss, updated, rho)`` (float64, ``(K, 4)``)."""
        members = self.members
        for c in self.chunks:
            idx, val = _writable(kernels[c.form])
            ks = range(c.start, c.stop)
            c.entries.learn_group(
                tuple([members[k]._flat for k in ks]),
                tuple([members[k]._flat_params for k in ks]),
                tuple([members[k]._flat_rho for k in ks]),
                idx,
                val,
                y,
                out[c.start : c.stop],
            )
        for k in self.singles:
            member, vector = members[k], kernels[self.forms[k]]
            if plain(member):
                out[k] = member.learn_kernel(vector, y)
            else:
                info = member.learn_checked(vector, y)
                out[k] = (info.score, info.loss, info.updated, info.rho)


def _one_kind(run: Sequence[Learner], forms: Sequence[str]) -> bool:
    """Whether ``run`` can go as one chunk: plain learners of one type over one form whose states,
    params and bias records numba types as one tuple type each."""
    if len(set(forms)) != 1 or len({type(m) for m in run}) != 1 or not all(plain(m) for m in run):
        return False
    records = (
        tuple(m._flat for m in run),
        tuple(m._flat_params for m in run),
        tuple(m._flat_rho for m in run),
    )
    return all(isinstance(numba.typeof(r), numba.types.UniTuple) for r in records)


def _writable(vector: SparseVector) -> SparseVector:
    idx, val = vector
    if not idx.flags.writeable:
        idx = idx.copy()
    if not val.flags.writeable:
        val = val.copy()
    return idx, val


def warm_up_chunk(cls: type[Learner], params: Mapping[str, object]) -> None:
    """Compile (or load) ``cls``'s group entry points for a chunk, as a composite calls them."""
    members: list[Learner] = [cls(3, fit_intercept=True, **params) for _ in range(CHUNK)]
    groups = MemberGroups(members, ["raw"] * CHUNK)
    if not groups.chunks:
        return
    kernels = {"raw": members[0].checked(np.array([0.6, 0.0, 0.8]), 1)[0]}
    groups.score(kernels, np.empty(CHUNK))
    groups.learn(kernels, 1, np.empty((CHUNK, 4)))
