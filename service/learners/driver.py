"""The one loop every learner runs through, compiled with numba.

An algorithm is three typed records and two kernels (the recipe is in
:mod:`service.learners.base`):

- its *state*, a ``NamedTuple`` of numpy arrays (``counts`` first, then ``w``);
- its *params*, a ``NamedTuple`` of typed scalars (floats and ints; an enumeration such as
  :class:`~service.learners.losses.Loss` is held as its ``int``), or :class:`NoParams`;
- ``score(st, idx, val) -> float``: ``mu . x`` for the canonical sparse ``x``;
- ``update(st, p, idx, val, y, score, rho) -> (loss, updated)``: one online step;
- optionally a fused ``step(st, p, idx, val, y, rho) -> (score, loss, updated)``, both in one
  pass, for an algorithm whose update walks what its score walks (:attr:`Kernels.step`).

An update is, mathematically, a function ``(state, params, x, y, score, rho) -> state'`` (that
is how :mod:`research.reference.steps` writes every algorithm, on dense vectors). The kernel
computes the same ``state'`` but writes it over ``state``'s arrays in place, so a step costs
no allocation of the model's size; who may see those arrays while that happens is settled by
:meth:`service.learners.base.Learner.borrowed_state`.

The driver owns what is common to all of them (LIBOL's ``ol_train`` loop, LIBSOL's base
model): the bias ``rho``, fixed or the Laplace estimate
``rho_t = alpha_p (t_n + 1) / (alpha_n (t_p + 1))`` from the labels *before* this one (a
:class:`RhoConfig`), and the per-class label counts ``st.counts = [t_p, t_n]`` that estimate
needs. ``learn_one`` serves single calls and ``learn_stream`` whole data sets; the stream loop
runs the very same :func:`step`, so both paths give bit-identical results.

The kernels are chosen at compile time from the state's type, so each algorithm gets its
own specialised, inlined and cached machine code; numba compiles a named tuple of mixed
scalar types into a plain struct passed by value. Records hold enumerations as plain ints
(``int(RhoMode.LAPLACE)``) and kernels compare them with the members: numba would type an
``IntEnum`` argument in about 30 us a call, longer than a whole ``learn``.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import Any, NamedTuple

import numpy as np
from numba.extending import overload
from numba.typed import List

from ..jit_cache import kernel


class RhoMode(IntEnum):
    """Where the bias ``rho`` comes from."""

    FIXED = 0
    LAPLACE = 1


class RhoConfig(NamedTuple):
    """The bias configuration every cost-sensitive step reads.

    ``mode`` (a :class:`RhoMode`, as an int) FIXED uses ``fixed``; LAPLACE uses
    ``alpha_p (t_n + 1) / (alpha_n (t_p + 1))`` with ``alpha_n = 1 - alpha_p`` (``fixed`` is
    then NaN)."""

    mode: int
    fixed: float
    alpha_p: float


class NoParams(NamedTuple):
    """The params record of an update that reads no hyper-parameter (the perceptron, ...)."""


class Kernels(NamedTuple):
    """What :func:`register` records for one state type."""

    params_type: type
    score: Callable[..., Any]
    update: Callable[..., Any]
    step: Callable[..., Any] | None = None
    """``(st, p, idx, val, y, rho) -> (score, loss, updated)``: ``score`` then ``update`` in one
    pass, for an algorithm whose update walks what its score walks (the forest); the same bits as
    the pair, which the driver then does not call one after the other."""


class Entries(NamedTuple):
    """The compiled entry points of one state type, called from Python with *plain* tuples.

    Numba types a named tuple argument in Python on every call (each field again: about 0.5 us
    an array on a loaded machine, 8 us for a 15-array state) where a plain tuple of arrays or
    scalars is typed from its fingerprint in C. So the learners pass ``tuple(state)`` (the forest
    fewer arrays, its node arrays' blocks: :func:`register`'s ``record``), ``tuple(params)`` and
    ``tuple(rho_cfg)``, and these kernels rebuild the records inside the compiled code (free) before
    running :func:`score_one` or :func:`learn_one`'s body: the same
    machine code on the same arrays, the same bits. (A stream, :func:`learn_stream`, pays the
    typing once per call and keeps the records.)"""

    score_one: Callable[..., Any]
    learn_one: Callable[..., Any]
    learn_dense: Callable[..., Any]
    """``(arrays, p, rho_cfg, x, keep_zeros, tail, tail_value, y) -> (ok, score, loss, updated,
    rho)``: :func:`dense_vector` of a dense row, then :func:`learn_one`'s round (``ok`` false, and
    nothing changed, when ``x`` is not finite). Compiled only for a learner that calls it."""
    score_dense: Callable[..., Any]
    """``(arrays, x, keep_zeros, tail, tail_value) -> (ok, score)``: :func:`dense_vector` of a dense
    row, then :func:`score_one` (``ok`` false when ``x`` is not finite). Compiled only for a learner
    that calls it."""
    learn_many: Callable[..., Any]
    """``(group, idx, val, y, at, scores, losses, updated, rhos) -> None``: :func:`learn_one`'s round
    for every learner of ``group`` (a typed list of ``(arrays, p, rho_cfg)`` made by
    :func:`learner_group`) on the same vector, in list order, learner ``k``'s outcome written at
    ``at[k]`` of the four arrays: the same steps on the same arrays, the same bits, in one call."""


_KERNELS: dict[type, Kernels] = {}
_ENTRIES: dict[type, Entries] = {}
_RECORDS: dict[type, Callable[..., Any]] = {}


def register(
    state_type: type,
    params_type: type,
    score_fn: Callable[..., Any],
    update_fn: Callable[..., Any],
    step_fn: Callable[..., Any] | None = None,
    record: Callable[..., Any] | None = None,
) -> None:
    """Declare the kernels of the algorithm whose state is ``state_type`` (one algorithm per
    state type: the type is what picks the kernels at compile time); ``step_fn`` is
    :attr:`Kernels.step`. ``record``: the compiled function that makes the state record of the
    plain tuple the learner passes its single-call entries (:class:`Entries`), when that tuple is
    not the record's own arrays (the forest packs its node arrays in fewer, each field a view)."""
    entry = Kernels(params_type, score_fn, update_fn, step_fn)
    if _KERNELS.setdefault(state_type, entry) != entry:
        raise ValueError(
            f"{state_type.__name__} already has other kernels: give each algorithm its own state type"
        )
    if record is not None:
        _RECORDS[state_type] = record
    if state_type not in _ENTRIES:
        _ENTRIES[state_type] = _flat_entries(state_type, params_type)


def entries(state_type: type) -> Entries:
    """The plain-tuple entry points of a registered state type (see :class:`Entries`)."""
    return _ENTRIES[state_type]


def registered(state_type: type) -> Kernels | None:
    """The kernels registered for ``state_type``, if any."""
    return _KERNELS.get(state_type)


@kernel
def current_rho(rho_cfg: RhoConfig, counts: np.ndarray) -> float:
    """The bias in use for the next label."""
    if rho_cfg.mode == RhoMode.LAPLACE:
        alpha_p = rho_cfg.alpha_p
        return alpha_p * (counts[1] + 1.0) / ((1.0 - alpha_p) * (counts[0] + 1.0))
    return rho_cfg.fixed


@kernel
def sparse_dot(w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> float:
    """``w . x`` over the support of ``x`` only, summed in index order."""
    s = 0.0
    for k in range(idx.shape[0]):
        s += w[idx[k]] * val[k]
    return s


@kernel
def sparse_sq_norm(val: np.ndarray) -> float:
    """``||x||^2``."""
    s = 0.0
    for k in range(val.shape[0]):
        s += val[k] * val[k]
    return s


def score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    """``mu . x`` by the kernel registered for ``type(st)`` (callable from jitted code only)."""
    raise NotImplementedError


def step(st: Any, p: Any, rho_cfg: RhoConfig, idx: np.ndarray, val: np.ndarray,
         y: int) -> tuple[float, float, bool, float]:  # fmt: skip
    """Score, then learn; ``(score, loss, updated, rho)`` (callable from jitted code only)."""
    raise NotImplementedError


@overload(score)
def _score_impl(st: Any, idx: Any, val: Any) -> Callable[..., float]:
    score_fn = _KERNELS[st.instance_class].score

    def impl(st: Any, idx: Any, val: Any) -> float:
        return score_fn(st, idx, val)

    return impl


@overload(step)
def _step_impl(st: Any, p: Any, rho_cfg: Any, idx: Any, val: Any, y: Any) -> Callable[..., Any]:
    _, score_fn, update_fn, step_fn = _KERNELS[st.instance_class]

    # numba requires the implementation's parameters to match the overload's exactly.
    def impl(st: Any, p: Any, rho_cfg: Any, idx: Any, val: Any, y: Any) -> tuple[float, float, bool, float]:
        s = score_fn(st, idx, val)
        rho = current_rho(rho_cfg, st.counts)
        loss, updated = update_fn(st, p, idx, val, y, s, rho)
        count_label(st.counts, y)
        return s, loss, updated, rho

    if step_fn is None:
        return impl
    fused_step: Callable[..., Any] = step_fn

    def fused(st: Any, p: Any, rho_cfg: Any, idx: Any, val: Any, y: Any) -> tuple[float, float, bool, float]:
        rho = current_rho(rho_cfg, st.counts)
        s, loss, updated = fused_step(st, p, idx, val, y, rho)
        count_label(st.counts, y)
        return s, loss, updated, rho

    return fused


@kernel
def count_label(counts: np.ndarray, y: int) -> None:
    """``[t_p, t_n]`` counts the label ``y``."""
    if y > 0:
        counts[0] += 1
    else:
        counts[1] += 1


@kernel
def score_one(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    return score(st, idx, val)


@kernel
def learn_one(st: Any, p: Any, rho_cfg: RhoConfig, idx: np.ndarray, val: np.ndarray,
              y: int) -> tuple[float, float, bool, float]:  # fmt: skip
    return step(st, p, rho_cfg, idx, val, y)


@kernel
def learn_stream(st: Any, p: Any, rho_cfg: RhoConfig, indptr: np.ndarray,
                 indices: np.ndarray, data: np.ndarray, ys: np.ndarray, scores: np.ndarray,
                 updated: np.ndarray) -> None:  # fmt: skip
    """Progressive validation over CSR rows: ``scores[i]`` is ``mu . x_i`` before learning row i."""
    for i in range(ys.shape[0]):
        a = indptr[i]
        b = indptr[i + 1]
        s, _, upd, _ = step(st, p, rho_cfg, indices[a:b], data[a:b], ys[i])
        scores[i] = s
        updated[i] = upd


def make_record(state_type: type, arrays: Any) -> Any:
    """The state record of a learner's plain tuple: ``state_type(*arrays)``, or the ``record``
    function :func:`register` was given (callable from jitted code only)."""
    raise NotImplementedError


@overload(make_record)
def _make_record_impl(state_type: Any, arrays: Any) -> Callable[..., Any]:
    # Chosen at compile time, like step's kernels: a closure over the record function itself would
    # not come from the disk cache (numba keys a closure on its pickled cells, and a dispatcher
    # pickles with an id of its process), where one over the state type does.
    record = _RECORDS.get(state_type.instance_class)
    if record is None:

        def whole(state_type: Any, arrays: Any) -> Any:
            return state_type(*arrays)

        return whole
    maker: Callable[..., Any] = record

    def packed(state_type: Any, arrays: Any) -> Any:
        return maker(*arrays)

    return packed


def _flat_entries(state_type: type, params_type: type) -> Entries:
    """:class:`Entries` for one state type (its record made by :func:`make_record`): numba
    specialises (and caches) each closure for the records it closes over."""

    @kernel
    def flat_score_one(arrays: Any, idx: np.ndarray, val: np.ndarray) -> float:
        return score(make_record(state_type, arrays), idx, val)

    @kernel
    def flat_learn_one(arrays: Any, p: Any, rho_cfg: Any, idx: np.ndarray, val: np.ndarray,
                       y: int) -> tuple[float, float, bool, float]:  # fmt: skip
        return step(make_record(state_type, arrays), params_type(*p), RhoConfig(*rho_cfg), idx, val, y)

    @kernel
    def flat_learn_dense(arrays: Any, p: Any, rho_cfg: Any, x: np.ndarray, keep_zeros: bool, tail: int,
                         tail_value: float, y: int) -> tuple[bool, float, float, bool, float]:  # fmt: skip
        ok, idx, val = dense_vector(x, keep_zeros, tail, tail_value)
        if not ok:
            return False, 0.0, 0.0, False, 0.0
        st = make_record(state_type, arrays)
        s, loss, updated, rho = step(st, params_type(*p), RhoConfig(*rho_cfg), idx, val, y)
        return True, s, loss, updated, rho

    @kernel
    def flat_score_dense(
        arrays: Any, x: np.ndarray, keep_zeros: bool, tail: int, tail_value: float
    ) -> tuple[bool, float]:
        ok, idx, val = dense_vector(x, keep_zeros, tail, tail_value)
        if not ok:
            return False, 0.0
        return True, score(make_record(state_type, arrays), idx, val)

    @kernel
    def flat_learn_many(group: Any, idx: np.ndarray, val: np.ndarray, y: int, at: np.ndarray,
                        scores: np.ndarray, losses: np.ndarray, updated: np.ndarray,
                        rhos: np.ndarray) -> None:  # fmt: skip
        for k in range(len(group)):
            arrays, p, rho_cfg = group[k]
            st = make_record(state_type, arrays)
            s, loss, upd, rho = step(st, params_type(*p), RhoConfig(*rho_cfg), idx, val, y)
            j = at[k]
            scores[j] = s
            losses[j] = loss
            updated[j] = upd
            rhos[j] = rho

    return Entries(flat_score_one, flat_learn_one, flat_learn_dense, flat_score_dense, flat_learn_many)


@kernel
def learner_group(items: Any, n: int) -> Any:
    """The first ``n`` of ``items`` (a tuple of ``(arrays, p, rho_cfg)`` of one type) as a typed list
    for :attr:`Entries.learn_many`. The list holds the learners' own arrays, not copies: its steps
    change them in place. Made in compiled code so that the list's own methods come from the disk
    cache with the rest (built from Python, a typed list compiles them in every process)."""
    group = List()
    for k in range(n):
        group.append(items[k])
    return group


@kernel
def dense_vector(
    x: np.ndarray, keep_zeros: bool, tail: int, tail_value: float
) -> tuple[bool, np.ndarray, np.ndarray]:
    """A dense row as the kernels read it, as :func:`~service.learners.inputs.canonical` and
    :func:`~service.learners.inputs.with_intercept` make it: the non-zero entries (every entry with
    ``keep_zeros``), then ``(tail, tail_value)`` unless ``tail < 0``; ``False`` when an entry is
    NaN or inf."""
    n = x.shape[0]
    kept = 0
    for k in range(n):
        if not np.isfinite(x[k]):
            return False, np.empty(0, np.int64), np.empty(0, np.float64)
        kept += keep_zeros or x[k] != 0.0
    m = 1 if tail >= 0 else 0
    idx = np.empty(kept + m, np.int64)
    val = np.empty(kept + m, np.float64)
    j = 0
    for k in range(n):
        if keep_zeros or x[k] != 0.0:
            idx[j] = k
            val[j] = x[k]
            j += 1
    if m:
        idx[j] = tail
        val[j] = tail_value
    return True, idx, val
