"""The one loop every learner runs through, compiled with numba.

An algorithm is a state type (a ``namedtuple`` of numpy arrays, mutated in place) and two
kernels registered for it with :func:`register`:

- ``score(st, idx, val) -> float``: ``mu . x`` for the canonical sparse ``x``;
- ``update(st, hp, idx, val, y, score, rho) -> (loss, updated)``: one online step, with
  ``hp`` the algorithm's float64 hyper-parameter vector.

The driver owns what is common to all of them (LIBOL's ``ol_train`` loop, LIBSOL's base
model): the bias ``rho``, fixed or the Laplace estimate
``rho_t = alpha_p (t_n + 1) / (alpha_n (t_p + 1))`` from the labels *before* this one, and
the per-class label counts ``st.counts = [t_p, t_n]`` that estimate needs. ``learn_one``
serves single calls and ``learn_stream`` whole data sets; the stream loop runs the very
same :func:`step`, so both paths give bit-identical results.

The kernels are chosen at compile time from the state's type, so each algorithm gets its
own specialised, inlined and cached machine code.

``rho_cfg`` is ``[mode, rho_fixed, alpha_p]`` with mode 0 (fixed) or 1 (Laplace).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba.extending import overload

from .jit import kernel

RHO_FIXED = 0.0
RHO_LAPLACE = 1.0

_KERNELS: dict[type, tuple[Callable[..., Any], Callable[..., Any]]] = {}


def register(state_type: type, score_fn: Callable[..., Any], update_fn: Callable[..., Any]) -> None:
    """Declare the kernels of the algorithm whose state is ``state_type``."""
    _KERNELS[state_type] = (score_fn, update_fn)


@kernel
def current_rho(rho_cfg: np.ndarray, counts: np.ndarray) -> float:
    """The bias in use for the next label."""
    if rho_cfg[0] == RHO_LAPLACE:
        alpha_p = rho_cfg[2]
        return alpha_p * (counts[1] + 1.0) / ((1.0 - alpha_p) * (counts[0] + 1.0))
    return rho_cfg[1]


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


def step(st: Any, hp: np.ndarray, rho_cfg: np.ndarray, idx: np.ndarray, val: np.ndarray,
         y: int) -> tuple[float, float, bool, float]:  # fmt: skip
    """Score, then learn; ``(score, loss, updated, rho)`` (callable from jitted code only)."""
    raise NotImplementedError


@overload(score)
def _score_impl(st: Any, idx: Any, val: Any) -> Callable[..., float]:
    score_fn, _ = _KERNELS[st.instance_class]

    def impl(st: Any, idx: Any, val: Any) -> float:
        return score_fn(st, idx, val)

    return impl


@overload(step)
def _step_impl(st: Any, hp: Any, rho_cfg: Any, idx: Any, val: Any, y: Any) -> Callable[..., Any]:
    score_fn, update_fn = _KERNELS[st.instance_class]

    # numba requires the implementation's parameters to match the overload's exactly.
    def impl(st: Any, hp: Any, rho_cfg: Any, idx: Any, val: Any, y: Any) -> tuple[float, float, bool, float]:
        s = score_fn(st, idx, val)
        rho = current_rho(rho_cfg, st.counts)
        loss, updated = update_fn(st, hp, idx, val, y, s, rho)
        if y > 0:
            st.counts[0] += 1
        else:
            st.counts[1] += 1
        return s, loss, updated, rho

    return impl


@kernel
def score_one(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    return score(st, idx, val)


@kernel
def learn_one(st: Any, hp: np.ndarray, rho_cfg: np.ndarray, idx: np.ndarray, val: np.ndarray,
              y: int) -> tuple[float, float, bool, float]:  # fmt: skip
    return step(st, hp, rho_cfg, idx, val, y)


@kernel
def learn_stream(st: Any, hp: np.ndarray, rho_cfg: np.ndarray, indptr: np.ndarray,
                 indices: np.ndarray, data: np.ndarray, ys: np.ndarray, scores: np.ndarray,
                 updated: np.ndarray) -> None:  # fmt: skip
    """Progressive validation over CSR rows: ``scores[i]`` is ``mu . x_i`` before learning row i."""
    for i in range(ys.shape[0]):
        a = indptr[i]
        b = indptr[i + 1]
        s, _, upd, _ = step(st, hp, rho_cfg, indices[a:b], data[a:b], ys[i])
        scores[i] = s
        updated[i] = upd
