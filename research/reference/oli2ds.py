"""OLI2DS, readable: one round as a pure state transition on ``{index: value}`` examples.

This is ``docs/learners.md`` §9 transcribed with no attention to speed (You et al.,
*Online Learning From Incomplete and Imbalanced Data Streams*, IEEE TKDE 35(10), 2023; the update
as the authors' code ``youdianlong/OLI2DS`` performs it). The fast learner
(:mod:`service.learners.oli2ds`) is tested against it; when the two disagree, this file is the one
to believe. It is not used by the service.

An example is the mapping of its **present** features to their values (an explicit 0 is present
unless ``zero_is_missing``). With ``P`` the present set, ``prev`` the present set of the previous
labelled example that had one, ``Cm = P ∩ prev`` (common), ``Nw = P \\ prev`` (new or returning) and
``prev \\ P`` (vanished, weights frozen until they return):

.. code-block:: text

    p_c = Σ_Cm h / (Σ_Cm h + Σ_Nw h)   (1 when 0/0),   p_n = 1 - p_c
    s   = p_c Σ_Cm w_i x_i + p_n Σ_Nw w_i x_i
    ℓ   = max(0, 1 - y s),   q = p_c² ‖x_Cm‖² + p_n² ‖x_Nw‖²   (1 when 0)
    c_y = ρ_y / (1 + ρ)   (ρ_+1 = ρ, ρ_-1 = 1; ρ = α_p n₋ / (α_n n₊) reproduces the code's
                          c = 1 / ((n₊/n₋)^[y=+1] + (n₋/n₊)^[y=-1]))
    τ   = θ c min(C, ℓ/q)   (cost_in="scale", the code)   or   min(C θ c, ℓ/q)   ("cap", the blog's KKT form)
    w_i += τ y p_c x_i  (i ∈ Cm),   w_i += τ y p_n x_i  (i ∈ Nw),   prev = P

Before scoring, ``learn`` updates the per-feature statistics of the present features (count, mean
and informativeness ``h``) and, except on the very first label, the class count ``n_y`` (Laplace
counts start at 1). On the very first label every present feature counts as common: the code
starts ``prev`` at the first example's features, and the spec's trace needs it.

``h`` under ``statistics="reference"`` (the code's rule, not a variance; it grows like
σ² ln cnt): on the second value ``h = ((mean - x)/2)²``, ``mean = (mean + x)/2``; afterwards
``cnt += 1``, ``δ = x - mean``, ``h += δ²/cnt``, ``mean += δ/cnt``. ``statistics="welford"``: ``h``
is the population variance, ``h = ((cnt-1) h + δ (x - mean_new)) / cnt``.

Optional sparsity (``sparsity=True``, after every non-empty round): ``w ← min(1, λ_s/‖w ⊙ Ĥ‖₁) w``
with ``Ĥ = h / Σh`` over the features seen (all 1 when Σh = 0), when ``‖w‖₁ > 0``; then, if
``nnz(w) > B u`` (``u`` = features seen), only the ``max(1, ⌊B u⌋)`` largest ``|w_i|`` are kept
(ties: the lower index is kept).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

Example = Mapping[int, float]
"""The present features of one example: index -> value."""


@dataclass(frozen=True)
class Params:
    """Hyper-parameters (the code's defaults)."""

    C: float = 0.01
    theta: float = 8.0
    rho: float | Literal["laplace"] = "laplace"
    alpha_p: float = 0.5
    statistics: Literal["reference", "welford"] = "reference"
    cost_in: Literal["scale", "cap"] = "scale"
    zero_is_missing: bool = False
    sparsity: bool = False
    lambda_s: float = 30.0
    B: float = 1.0


@dataclass(frozen=True)
class State:
    """Everything OLI2DS learns; ``u`` = the number of feature slots."""

    w: np.ndarray
    mean: np.ndarray
    h: np.ndarray
    cnt: np.ndarray
    prev: frozenset[int]
    t: int
    n_pos: int
    n_neg: int


def initial_state(u: int) -> State:
    return State(
        w=np.zeros(u), mean=np.zeros(u), h=np.zeros(u), cnt=np.zeros(u, dtype=np.int64),
        prev=frozenset(), t=0, n_pos=1, n_neg=1,
    )  # fmt: skip


def present(x: Example, params: Params) -> dict[int, float]:
    """The features OLI2DS sees: all given, or the non-zero ones with ``zero_is_missing``."""
    return {int(i): float(v) for i, v in x.items() if not (params.zero_is_missing and v == 0.0)}


def split(state: State, x: Example) -> tuple[list[int], list[int], float, float]:
    """``(Cm, Nw, p_c, p_n)`` for the present features ``x`` under ``state``."""
    prev = set(x) if state.t == 0 else state.prev
    common = sorted(i for i in x if i in prev)
    new = sorted(i for i in x if i not in prev)
    h_c = sum(float(state.h[i]) for i in common)
    h_n = sum(float(state.h[i]) for i in new)
    p_c = h_c / (h_c + h_n) if h_c + h_n != 0.0 else 1.0
    return common, new, p_c, 1.0 - p_c


def _score(state: State, x: dict[int, float]) -> float:
    common, new, p_c, p_n = split(state, x)
    return p_c * sum(state.w[i] * x[i] for i in common) + p_n * sum(state.w[i] * x[i] for i in new)


def score(state: State, x: Example, params: Params) -> float:
    """``s`` for ``x`` under the current state; the statistics are not touched."""
    return float(_score(state, present(x, params)))


def rho(state: State, params: Params) -> float:
    """The bias: pinned, or ``α_p n₋ / (α_n n₊)`` from the Laplace class counts."""
    if params.rho == "laplace":
        return params.alpha_p * state.n_neg / ((1.0 - params.alpha_p) * state.n_pos)
    return float(params.rho)


def cost(state: State, y: int, params: Params) -> float:
    """``c_y = ρ_y / (1 + ρ)``."""
    r = rho(state, params)
    return r / (1.0 + r) if y == 1 else 1.0 / (1.0 + r)


def _update_stats(state: State, x: dict[int, float], params: Params) -> None:
    cnt, mean, h = state.cnt, state.mean, state.h
    for i, v in x.items():
        if cnt[i] == 0 or state.t == 0:
            cnt[i], mean[i], h[i] = 1, v, 0.0
        elif params.statistics == "welford":
            cnt[i] += 1
            delta = v - mean[i]
            mean[i] += delta / cnt[i]
            h[i] = ((cnt[i] - 1) * h[i] + delta * (v - mean[i])) / cnt[i]
        elif cnt[i] == 1:
            half = (mean[i] - v) / 2.0
            h[i] = half * half  # the kernel's square (numba's ``** 2``); ``pow`` is off by an ulp at times
            mean[i] = (mean[i] + v) / 2.0
            cnt[i] = 2
        else:
            cnt[i] += 1
            delta = v - mean[i]
            h[i] += delta * delta / cnt[i]
            mean[i] += delta / cnt[i]


def _sparsify(state: State, params: Params) -> None:
    w, seen = state.w, state.cnt > 0
    if np.abs(w).sum() == 0.0:
        return
    total = state.h[seen].sum()
    informativeness = np.where(seen, state.h / total, 0.0) if total != 0.0 else seen.astype(float)
    mass = np.abs(w * informativeness).sum()
    w *= min(1.0, params.lambda_s / mass) if mass > 0.0 else 1.0
    u = int(seen.sum())
    if np.count_nonzero(w) > params.B * u:
        keep = max(1, math.floor(params.B * u))
        order = sorted(range(w.shape[0]), key=lambda i: (-abs(w[i]), i))
        w[order[keep:]] = 0.0


def learn(state: State, x: Example, y: int, params: Params) -> tuple[State, float]:
    """One round: the new state and the score ``s`` (computed after the statistics update)."""
    xs = present(x, params)
    new_state = replace(state, w=state.w.copy(), mean=state.mean.copy(), h=state.h.copy(),
                        cnt=state.cnt.copy())  # fmt: skip
    _update_stats(new_state, xs, params)
    if state.t > 0:
        new_state = replace(new_state, n_pos=state.n_pos + (y == 1), n_neg=state.n_neg + (y != 1))
    common, new, p_c, p_n = split(new_state, xs)
    s = float(_score(new_state, xs))
    new_state = replace(new_state, t=state.t + 1)
    if not xs:
        return new_state, s
    loss = max(0.0, 1.0 - y * s)
    q = p_c**2 * sum(xs[i] ** 2 for i in common) + p_n**2 * sum(xs[i] ** 2 for i in new)
    q = q if q != 0.0 else 1.0
    c = cost(new_state, y, params)
    if params.cost_in == "scale":
        tau = params.theta * c * min(params.C, loss / q)
    else:
        tau = min(params.C * params.theta * c, loss / q)
    w = new_state.w
    for i in common:
        w[i] += tau * y * p_c * xs[i]
    for i in new:
        w[i] += tau * y * p_n * xs[i]
    new_state = replace(new_state, prev=frozenset(xs))
    if params.sparsity:
        _sparsify(new_state, params)
    return new_state, s


def run(examples: list[Example], labels: list[int], u: int, params: Params) -> tuple[State, np.ndarray]:
    """Replay a stream; returns the final state and the score of each round."""
    state = initial_state(u)
    scores = np.empty(len(examples))
    for k, (x, y) in enumerate(zip(examples, labels, strict=True)):
        state, scores[k] = learn(state, x, int(y), params)
    return state, scores
