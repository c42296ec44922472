"""SDROGD (Xue & Ren, *Appl. Intell.* 2020) and mini-batch Pegasos: the numba learners.

The specification is ``docs/learners.md`` §8; the readable transcription the
kernels are tested against is :mod:`research.reference.sdrogd`.

**SDROGD** is mini-batch Pegasos (hinge loss + ``lam/2 ||w||^2``) plus the LDA-style regulariser
``1/2 w' R_hat w`` with ``R_hat = eta S_w_hat - (1 - eta) S_b`` (``eta`` is ``lda_weight`` here: the
service's ``eta`` is a learning rate). A Frequent Directions sketch ``B``
(:mod:`service.learners.frequent_directions`) tracks ``X'X``, so no ``d x d`` matrix is formed.
Per labelled example, ``w`` fixed inside a batch of ``n = batch_size`` (so this *is* the paper's
batch algorithm, one example at a time)::

    loss I:  joins if rho_y - y w.x > 0, g += y x;   loss II: joins if 1 - y w.x > 0, g += rho_y y x
    k += 1; N_y += 1; s += x; s_y += x; B <- insert(B, x)
    if k == n:  t += 1; N = N_+ + N_-; u = s / N; v_c = sqrt(N_c / N) (s_c / N_c - u)
                z = eta B'(B w) / N - eta' u (u'w) - sum_c v_c (v_c'w)            # R_hat w, eq. (17)
                w <- w - (1/t) (lam w + z - g / k);  g = 0; k = 0

``rho_y = rho`` for ``y = +1`` and 1 otherwise (the service's bias on the hinge part only; the
scatter stays unweighted; ``rho = 1`` is the paper). ``eta' = eta`` (``eq17="expanded"``) or 1
(``"printed"``); ``B`` is all ``2l`` rows (``sketch_rows="all"``) or the top ``l`` (``"upper"``).
``l = ceil(sketch_fraction * d)``. A step whose ``w`` would not be finite is refused: ``w`` and
``t`` stay, the batch is cleared and ``refused`` counts it, so the model never holds a NaN. An
example whose ``||x||^2`` overflows is skipped whole (``skipped`` counts it): the sketch could not
represent it [decision].

**Pegasos** keeps ``w``, ``g``, ``k``, ``t`` and steps with ``alpha_t = 1 / (lam t)``:
``w <- w - (1 / (lam t)) (lam w - g / k)``.

Cost per label: O(nnz(x)), plus, for SDROGD, the amortised O(l d) of a shrink (one O(l^2 d) SVD
per ``l`` or more inserts) and O(l d) per step. Memory: ``(2l + 5) d`` floats for SDROGD (``w``,
``g``, the three sums, the sketch), ``2 d`` for Pegasos; all of it is in ``to_state``, so the
batch boundary is part of the checkpoint and of the deterministic replay.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..jit_cache import kernel
from .base import Learner, _real, loss_kind, positive_int
from .covariance import DEFAULT_MEMORY_BUDGET, memory_budget
from .driver import sparse_sq_norm
from .errors import InvalidParameter
from .first_order import add_scaled, linear_score
from .frequent_directions import fd_insert
from .losses import Loss, cost_sensitive_loss
from .migration import FeatureMigration

SDROGDState = namedtuple("SDROGDState", ["counts", "w", "g", "sums", "sketch", "tally"])
"""``sums`` rows: s (all), s_+ , s_-; ``tally``: k, t, filled, N_+, N_-, refused, skipped."""
PegasosState = namedtuple("PegasosState", ["counts", "w", "g", "tally"])
"""``tally``: k, t, refused."""

K, T, FILLED, N_POS, N_NEG, REFUSED, SKIPPED = range(7)
P_K, P_T, P_REFUSED = range(3)


class SDROGDParams(NamedTuple):
    lda_weight: float  # the paper's eta
    lam: float
    batch_size: int
    printed: int  # 1: eq. (17) as printed, -u(u'w); 0: expanded, -eta u(u'w)
    upper: int  # 1: the top l sketch rows (the paper's C); 0: all 2l
    loss: int  # a Loss


class PegasosParams(NamedTuple):
    lam: float
    batch_size: int
    loss: int  # a Loss


# --------------------------------------------------------------------------- kernels


@kernel
def hinge_part(st: Any, kind: int, idx: np.ndarray, val: np.ndarray, y: int, score: float,
               rho: float) -> float:  # fmt: skip
    """Add the example's hinge sub-gradient to the batch sum ``g``; returns the loss."""
    loss, c = cost_sensitive_loss(kind, y, score, rho)
    if loss > 0.0:
        add_scaled(st.g, idx, val, c * y)
    return loss


@kernel
def accept(w: np.ndarray, new: np.ndarray) -> bool:
    """``w <- new`` if every entry is finite; otherwise leave ``w`` and return False."""
    for i in range(new.shape[0]):
        if not np.isfinite(new[i]):
            return False
    w[:] = new
    return True


@kernel
def scatter_times(st: Any, p: SDROGDParams, w: np.ndarray) -> np.ndarray:
    """``z = R_hat w`` by eq. (17): O(l d), no ``d x d`` matrix."""
    tally = st.tally
    eta = p.lda_weight
    n_pos, n_neg = tally[N_POS], tally[N_NEG]
    n = float(n_pos + n_neg)
    u = st.sums[0] / n
    rows = tally[FILLED]
    if p.upper:
        rows = min(rows, st.sketch.shape[0] // 2)
    B = st.sketch[:rows]
    mean_weight = 1.0 if p.printed else eta
    z = eta * (B.T @ (B @ w)) / n - mean_weight * u * (u @ w)
    for c in range(2):
        n_c = n_pos if c == 0 else n_neg
        if n_c > 0:
            v = math.sqrt(n_c / n) * (st.sums[1 + c] / n_c - u)
            z = z - v * (v @ w)
    return z


@kernel
def sdrogd_step(st: Any, p: SDROGDParams) -> bool:
    """The batch's step; returns whether ``w`` moved. A no-op on an empty batch."""
    tally = st.tally
    k = tally[K]
    if k == 0:
        return False
    t = tally[T] + 1
    w = st.w
    z = scatter_times(st, p, w)
    new = w - (1.0 / t) * (p.lam * w + z - st.g / k)
    moved = accept(w, new)
    if moved:
        tally[T] = t
    else:
        tally[REFUSED] += 1
    st.g[:] = 0.0
    tally[K] = 0
    return moved


@kernel
def sdrogd_update(st: Any, p: SDROGDParams, idx: np.ndarray, val: np.ndarray, y: int,
                  score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    tally, sums = st.tally, st.sums
    if not np.isfinite(sparse_sq_norm(val)):  # ||x||^2 overflows: the sketch could not hold it
        tally[SKIPPED] += 1
        return 0.0, False
    loss = hinge_part(st, p.loss, idx, val, y, score, rho)
    tally[K] += 1
    c = 1 if y > 0 else 2
    tally[N_POS if y > 0 else N_NEG] += 1
    for j in range(idx.shape[0]):
        sums[0, idx[j]] += val[j]
        sums[c, idx[j]] += val[j]
    tally[FILLED] = fd_insert(st.sketch, tally[FILLED], idx, val)
    if tally[K] == p.batch_size:
        return loss, sdrogd_step(st, p)
    return loss, False


@kernel
def pegasos_step(st: Any, p: PegasosParams) -> bool:
    tally = st.tally
    k = tally[P_K]
    if k == 0:
        return False
    t = tally[P_T] + 1
    lam = p.lam
    w = st.w
    new = w - (1.0 / (lam * t)) * (lam * w - st.g / k)
    moved = accept(w, new)
    if moved:
        tally[P_T] = t
    else:
        tally[P_REFUSED] += 1
    st.g[:] = 0.0
    tally[P_K] = 0
    return moved


@kernel
def pegasos_update(st: Any, p: PegasosParams, idx: np.ndarray, val: np.ndarray, y: int,
                   score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    loss = hinge_part(st, p.loss, idx, val, y, score, rho)
    st.tally[P_K] += 1
    if st.tally[P_K] == p.batch_size:
        return loss, pegasos_step(st, p)
    return loss, False


# --------------------------------------------------------------------------- parameters


def unit_interval(name: str) -> Any:
    def check(value: Any) -> float:
        v = _real(name, value)
        if not 0.0 <= v <= 1.0:
            raise InvalidParameter(name, f"must lie in [0, 1], got {value!r}")
        return v

    return check


def non_negative(name: str) -> Any:
    def check(value: Any) -> float:
        v = _real(name, value)
        if not v >= 0.0:
            raise InvalidParameter(name, f"must be >= 0, got {value!r}")
        return v

    return check


def fraction(value: Any) -> float:
    v = _real("sketch_fraction", value)
    if not 0.0 < v <= 1.0:
        raise InvalidParameter("sketch_fraction", f"must lie in (0, 1], got {value!r}")
    return v


def choice(name: str, options: tuple[str, ...]) -> Any:
    def check(value: Any) -> str:
        if value not in options:
            raise InvalidParameter(name, f"must be one of {', '.join(map(repr, options))}, got {value!r}")
        return str(value)

    return check


def positive_lam(value: Any) -> float:
    v = _real("lam", value)
    if not v > 0.0:
        raise InvalidParameter("lam", f"must be > 0 (the step is 1 / (lam t)), got {value!r}")
    return v


MAX_BATCH = 1_000_000


def batch(value: Any) -> int:
    n = positive_int("batch_size")(value)
    if n > MAX_BATCH:
        raise InvalidParameter("batch_size", f"must be <= {MAX_BATCH}, got {value!r}")
    return n


def sketch_size(d: int, sketch_fraction: float) -> int:
    """``l = ceil(sketch_fraction d)``, at least 1 [decision: round up]."""
    return max(1, math.ceil(sketch_fraction * d))


def sdrogd_nbytes(dim: int, ell: int) -> int:
    """Bytes of an SDROGD state: ``(2l + 5) d`` floats (and a few counters)."""
    return (2 * ell + 5) * dim * 8


class _Batched(Learner):
    """What SDROGD and Pegasos share: batches, steps, refusals, ``flush`` and ``describe``."""

    _step_kernel: ClassVar[Any]
    _slots: ClassVar[tuple[int, int, int]]  # k, t, refused in the tally

    def flush(self) -> bool:
        """Step on the partial batch now (the reproduction protocol does, at the end of the
        training pass; the service never does). Returns whether ``w`` moved."""
        self._refuse_if_borrowed()
        return bool(type(self)._step_kernel(self._st, self._kernel_params))

    def migrate_schema(self, migration: FeatureMigration) -> _Batched:
        """This learner on a new feature schema (:mod:`service.learners.migration`), the plainest
        honest way: ``w``, the batch sum ``g`` and (SDROGD) the class sums keep the survived
        coordinates, 0 on new ones; SDROGD's sketch keeps its survived columns (``B[:, S]'B[:, S]``
        is the sketch of ``X[:, S]'X[:, S]``, so the bounds carry over) and is re-inserted row by row
        into a sketch of the new ``l``; the counters (batch, steps, class counts) continue. The
        learner itself is left as it was."""
        from .migration import carry_columns, carry_vector

        src = migration.over_dims(bool(self.params["fit_intercept"]))
        fresh = type(self)(migration.n_new, **self.params)
        old, new = self._arrays, fresh._arrays
        new["counts"][:] = old["counts"]
        for name in ("w", "g"):
            new[name][:] = carry_vector(old[name], src, np.zeros(fresh.dim))
        if "sums" in old:
            new["sums"][:] = carry_columns(old["sums"], src, fresh.dim)
            tally = old["tally"].copy()
            rows = carry_columns(old["sketch"][: int(tally[FILLED])], src, fresh.dim)
            filled = 0
            for row in rows:
                idx = np.flatnonzero(row).astype(np.int64)
                filled = int(fd_insert(new["sketch"], filled, idx, row[idx]))
            tally[FILLED] = filled
            new["tally"][:] = tally
        else:
            new["tally"][:] = old["tally"]
        return fresh

    def describe(self) -> dict[str, Any]:
        """``{"batch": ...}``: the batch size, the labels since the last step, the steps taken and
        the steps refused (``w`` would not have been finite)."""
        tally = self._arrays["tally"]
        k, t, refused = (int(tally[i]) for i in self._slots)
        batch = {"size": self.params["batch_size"], "labels_since_step": k, "steps": t}
        batch["refused_steps"] = refused
        return {**super().describe(), "batch": batch}


class SDROGD(_Batched):
    """Sketch discriminatively regularised online gradient descent; see the module docstring.

    ``lda_weight`` is the paper's eta (the weight of the within-class scatter; ``1 - eta`` weighs
    the between-class scatter), named so that it is not taken for a learning rate.
    """

    algorithm = "sdrogd"
    own_params: ClassVar = {
        "lda_weight": (0.3, unit_interval("lda_weight")),
        "lam": (0.0, non_negative("lam")),
        "sketch_fraction": (0.1, fraction),
        "batch_size": (60, batch),
        "eq17": ("expanded", choice("eq17", ("expanded", "printed"))),
        "sketch_rows": ("all", choice("sketch_rows", ("all", "upper"))),
        "loss": ("II", loss_kind),
        "memory_budget": (DEFAULT_MEMORY_BUDGET, memory_budget),
    }
    state_type = SDROGDState
    params_type = SDROGDParams
    kernels = (linear_score, sdrogd_update)
    _step_kernel = sdrogd_step
    _slots = (K, T, REFUSED)

    @property
    def sketch_size(self) -> int:
        """``l``: the sketch keeps ``2l`` rows."""
        return sketch_size(self.dim, self.params["sketch_fraction"])

    def _check_params(self) -> None:
        need = sdrogd_nbytes(self.dim, self.sketch_size)
        budget = self.params["memory_budget"]
        if need > budget:
            raise InvalidParameter(
                "n_features",
                f"sdrogd keeps (2l + 5) d = {(2 * self.sketch_size + 5) * self.dim} floats "
                f"(l = {self.sketch_size} from sketch_fraction {self.params['sketch_fraction']:g}, "
                f"d = {self.dim}): {need / 2**20:.1f} MiB, over the memory budget of "
                f"{budget / 2**20:.1f} MiB. Lower sketch_fraction, use pegasos, or raise memory_budget.",
            )

    def kernel_params(self) -> SDROGDParams:
        p = self.params
        return SDROGDParams(
            lda_weight=float(p["lda_weight"]),
            lam=float(p["lam"]),
            batch_size=int(p["batch_size"]),
            printed=int(p["eq17"] == "printed"),
            upper=int(p["sketch_rows"] == "upper"),
            loss=int(Loss[p["loss"]]),
        )

    def _init_arrays(self) -> dict[str, np.ndarray]:
        d = self.dim
        return {
            "w": np.zeros(d),
            "g": np.zeros(d),
            "sums": np.zeros((3, d)),
            "sketch": np.zeros((2 * self.sketch_size, d)),
            "tally": np.zeros(7, dtype=np.int64),
        }

    def describe(self) -> dict[str, Any]:
        """Adds ``"sketch"``: ``l``, the rows in use (of ``2l``) and the examples skipped whole."""
        tally = self._arrays["tally"]
        sketch = {
            "size": self.sketch_size,
            "rows_in_use": int(tally[FILLED]),
            "skipped_examples": int(tally[SKIPPED]),
        }
        return {**super().describe(), "sketch": sketch}


class Pegasos(_Batched):
    """Mini-batch Pegasos (Shalev-Shwartz et al. 2011) with ``alpha_t = 1 / (lam t)``."""

    algorithm = "pegasos"
    own_params: ClassVar = {
        "lam": (1.0, positive_lam),
        "batch_size": (60, batch),
        "loss": ("II", loss_kind),
    }
    state_type = PegasosState
    params_type = PegasosParams
    kernels = (linear_score, pegasos_update)
    _step_kernel = pegasos_step
    _slots = (P_K, P_T, P_REFUSED)

    def kernel_params(self) -> PegasosParams:
        p = self.params
        return PegasosParams(lam=float(p["lam"]), batch_size=int(p["batch_size"]), loss=int(Loss[p["loss"]]))

    def _init_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.dim), "g": np.zeros(self.dim), "tally": np.zeros(3, dtype=np.int64)}
