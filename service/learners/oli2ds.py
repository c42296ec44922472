"""OLI2DS: passive-aggressive learning when features come and go and the class ratio drifts.

You et al., *Online Learning From Incomplete and Imbalanced Data Streams* (IEEE TKDE 35(10),
2023), as ``docs/learners.md`` §9 specifies it from the authors' code. Each example
carries any subset ``P`` of the feature slots; ``prev`` is the present set of the previous
labelled example. Features in ``Cm = P ∩ prev`` are *common*, those in ``Nw = P \\ prev`` new or
returning (with their stored weight), and those in ``prev \\ P`` have vanished: their weights stay
as they are until they return. With per-feature informativeness ``h``:

.. code-block:: text

    p_c = Σ_Cm h / (Σ_Cm h + Σ_Nw h)  (1 when 0/0),  p_n = 1 - p_c
    s   = p_c Σ_Cm w_i x_i + p_n Σ_Nw w_i x_i
    ℓ   = max(0, 1 - y s),  q = p_c² ‖x_Cm‖² + p_n² ‖x_Nw‖²  (1 when 0)
    c_y = ρ_y / (1 + ρ)   with ρ_+1 = ρ, ρ_-1 = 1
    τ   = θ c_y min(C, ℓ/q)   (cost_in="scale")   or   min(C θ c_y, ℓ/q)   (cost_in="cap")
    w_i += τ y p_c x_i (i ∈ Cm),  w_i += τ y p_n x_i (i ∈ Nw),  prev = P

``learn`` first updates the statistics of the present features and the Laplace class counts
``n₊, n₋`` (both start at 1; the very first label is not counted, as in the code), then computes
``s`` (returned as the round's score), then updates. ``ρ = "laplace"`` is ``α_p n₋ / (α_n n₊)``,
which with ``α_p = 0.5`` gives the code's dynamic cost ``c = 1/((n₊/n₋)^[y=+1] + (n₋/n₊)^[y=-1])``;
a number pins it (``c_p / c_n`` for the cost objective gives ``c_+1 = c_p``). ``score`` uses the
current statistics and never changes them. On the very first label all present features count as
common (the code starts ``prev`` at the first example). See :mod:`research.reference.oli2ds` for the
statistics rules (``"reference"``, ``"welford"``) and the optional sparsity step.

Cost: O(nnz) per ``learn`` and ``score`` (the sparsity step, off by default, is O(u)). State per
feature slot: ``w``, ``mean``, ``h`` (float64), ``cnt`` and ``last_seen`` (int64): the present set
``prev`` is the slots whose ``last_seen`` equals the stamp of the previous non-empty labelled example.

Input: the learner reads **presence** (``needs_presence``): a dense vector has every feature
present, a sparse pair or CSR row the indices it stores, explicit zeros included;
``zero_is_missing=True`` reads 0 as absent, as the code does.

>>> import numpy as np
>>> from service.learners import create
>>> learner = create("oli2ds", n_features=3)
>>> [round(learner.learn((np.array(i), np.array(v, float)), y).score, 6) for i, v, y in [
...     ([0, 1], [1, 2], 1), ([1, 2], [1, -1], -1), ([0, 2], [2, 1], 1), ([0, 1, 2], [1, 1, 1], -1)]]
[0.0, 0.08, 0.016, 0.082222]
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..jit_cache import kernel
from .base import Learner, UpdateInfo, alpha_p_value, flag, positive, rho_value
from .errors import InvalidInput, InvalidParameter
from .inputs import SparseVector, canonical, with_intercept

Oli2dsState = namedtuple(
    "Oli2dsState", ["counts", "w", "mean", "h", "cnt", "last_seen", "clock", "class_counts"]
)
"""``counts`` = [t_p, t_n] labels seen; ``clock`` = [t, stamp of prev]; ``class_counts`` = [n₊, n₋]."""


class Oli2dsParams(NamedTuple):
    """What the kernels read (the checked ``params`` as typed scalars)."""

    C: float
    theta: float
    rho_laplace: bool  # ρ from the class counts; else ``rho``
    rho: float
    alpha_p: float
    welford: bool  # statistics="welford"; else the code's rule
    cap: bool  # cost_in="cap"; else "scale"
    sparsity: bool
    lambda_s: float
    B: float


@kernel
def _split(st: Any, idx: np.ndarray, val: np.ndarray) -> tuple[float, float, float, float]:
    """``(p_c, p_n, s, q)`` for the present features ``x``, summed in index order. A feature is
    common when it was present in ``prev`` (every feature is, on the very first label)."""
    first = st.clock[0] == 0
    stamp = st.clock[1]
    last_seen, h, w = st.last_seen, st.h, st.w
    h_c = 0.0
    h_n = 0.0
    dot_c = 0.0
    dot_n = 0.0
    sq_c = 0.0
    sq_n = 0.0
    for k in range(idx.shape[0]):
        i = idx[k]
        v = val[k]
        if first or (stamp > 0 and last_seen[i] == stamp):
            h_c += h[i]
            dot_c += w[i] * v
            sq_c += v * v
        else:
            h_n += h[i]
            dot_n += w[i] * v
            sq_n += v * v
    p_c = h_c / (h_c + h_n) if h_c + h_n != 0.0 else 1.0
    p_n = 1.0 - p_c
    return p_c, p_n, p_c * dot_c + p_n * dot_n, p_c * p_c * sq_c + p_n * p_n * sq_n


@kernel
def oli2ds_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    """``s`` under the current state (nothing changes)."""
    return _split(st, idx, val)[2]


@kernel
def _update_stats(st: Any, p: Any, idx: np.ndarray, val: np.ndarray) -> None:
    """Count, mean and ``h`` of the present features (reset on the very first label)."""
    first = st.clock[0] == 0
    welford = p.welford
    cnt, mean, h = st.cnt, st.mean, st.h
    for k in range(idx.shape[0]):
        i = idx[k]
        v = val[k]
        if first or cnt[i] == 0:
            cnt[i] = 1
            mean[i] = v
            h[i] = 0.0
        elif welford:
            cnt[i] += 1
            delta = v - mean[i]
            mean[i] += delta / cnt[i]
            h[i] = ((cnt[i] - 1) * h[i] + delta * (v - mean[i])) / cnt[i]
        elif cnt[i] == 1:
            h[i] = ((mean[i] - v) / 2.0) ** 2
            mean[i] = (mean[i] + v) / 2.0
            cnt[i] = 2
        else:
            cnt[i] += 1
            delta = v - mean[i]
            h[i] += delta * delta / cnt[i]
            mean[i] += delta / cnt[i]


@kernel
def oli2ds_rho(p: Any, class_counts: np.ndarray) -> float:
    """``ρ``: pinned, or ``α_p n₋ / (α_n n₊)`` from the Laplace class counts."""
    if p.rho_laplace:
        return p.alpha_p * class_counts[1] / ((1.0 - p.alpha_p) * class_counts[0])
    return p.rho


@kernel
def _sparsify(st: Any, p: Any) -> bool:
    """``w ← min(1, λ_s/‖w ⊙ Ĥ‖₁) w``, then keep the ``max(1, ⌊B u⌋)`` largest ``|w_i|`` (O(u));
    whether ``w`` changed."""
    w = st.w
    l1 = 0.0
    total = 0.0
    seen = 0
    for i in range(w.shape[0]):
        l1 += abs(w[i])
        if st.cnt[i] > 0:
            total += st.h[i]
            seen += 1
    if l1 == 0.0:
        return False
    mass = 0.0
    for i in range(w.shape[0]):
        if st.cnt[i] > 0:
            mass += abs(w[i] * (st.h[i] / total if total != 0.0 else 1.0))
    factor = min(1.0, p.lambda_s / mass) if mass > 0.0 else 1.0
    changed = factor != 1.0
    nnz = 0
    for i in range(w.shape[0]):
        w[i] *= factor
        nnz += w[i] != 0.0
    if nnz > p.B * seen:
        keep = max(1, int(np.floor(p.B * seen)))
        order = np.argsort(-np.abs(w), kind="mergesort")
        for r in range(keep, w.shape[0]):
            changed |= w[order[r]] != 0.0
            w[order[r]] = 0.0
    return changed


@kernel
def _round(st: Any, p: Any, idx: np.ndarray, val: np.ndarray, y: int) -> tuple[float, float, bool, float]:
    """One round on the present features ``x``, all but the label counts ``st.counts``:
    ``(s, loss, updated, rho)``."""
    _update_stats(st, p, idx, val)
    if st.clock[0] > 0:
        st.class_counts[0 if y > 0 else 1] += 1
    p_c, p_n, s, q = _split(st, idx, val)
    rho = oli2ds_rho(p, st.class_counts)
    t = st.clock[0] + 1
    if idx.shape[0] == 0:
        st.clock[0] = t
        return s, 0.0, False, rho
    loss = max(0.0, 1.0 - y * s)
    if q == 0.0:
        q = 1.0
    c = rho / (1.0 + rho) if y > 0 else 1.0 / (1.0 + rho)
    tau = min(p.C * p.theta * c, loss / q) if p.cap else p.theta * c * min(p.C, loss / q)
    first = t == 1
    stamp = st.clock[1]
    last_seen, w = st.last_seen, st.w
    for k in range(idx.shape[0]):
        i = idx[k]
        common = first or (stamp > 0 and last_seen[i] == stamp)
        w[i] += tau * y * (p_c if common else p_n) * val[k]
    for k in range(idx.shape[0]):
        last_seen[idx[k]] = t
    st.clock[0] = t
    st.clock[1] = t
    moved = tau != 0.0
    if p.sparsity:
        moved |= _sparsify(st, p)
    return s, loss, moved, rho


@kernel
def oli2ds_learn(st: Any, p: Any, idx: np.ndarray, val: np.ndarray,
                 y: int) -> tuple[float, float, bool, float]:  # fmt: skip
    """One round on the present features ``x``: ``(s, loss, updated, rho)``, ``s`` and ``rho``
    being the score and bias the update used."""
    out = _round(st, p, idx, val, y)
    st.counts[0 if y > 0 else 1] += 1
    return out


@kernel
def oli2ds_update(st: Any, p: Any, idx: np.ndarray, val: np.ndarray, y: int,
                  score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    """The round in the driver's shape (the driver counts the label). OLI2DS recomputes its score
    after updating its statistics and takes its bias from its own class counts, so ``score`` and
    ``rho`` are not read; the state ends as :meth:`OLI2DS.learn` leaves it."""
    _, loss, moved, _ = _round(st, p, idx, val, y)
    return loss, moved


@kernel
def oli2ds_stream(st: Any, p: Any, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                  ys: np.ndarray, scores: np.ndarray, updated: np.ndarray) -> None:  # fmt: skip
    """``learn`` over CSR rows (stored entries are the present features)."""
    for r in range(ys.shape[0]):
        a = indptr[r]
        b = indptr[r + 1]
        s, _, upd, _ = oli2ds_learn(st, p, indices[a:b], data[a:b], ys[r])
        scores[r] = s
        updated[r] = upd


def _choice(name: str, options: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in options:
            raise InvalidParameter(name, f"must be one of {', '.join(map(repr, options))}, got {value!r}")
        return str(value)

    return check


def _fraction_b(value: Any) -> float:
    v = positive("B")(value)
    if v > 1.0:
        raise InvalidParameter("B", f"must lie in (0, 1] (the share of features kept), got {value!r}")
    return v


DESCRIBED_FEATURES = 50
"""How many present features :meth:`OLI2DS.describe` lists."""


class OLI2DS(Learner):
    """Online learning from incomplete and imbalanced data streams (see the module docstring).

    Parameters: ``C`` (0.01) and ``theta`` (8) as the code; ``rho`` (``"laplace"``: the class
    counts, or a number) with ``alpha_p``; ``statistics`` (``"reference"`` | ``"welford"``);
    ``cost_in`` (``"scale"`` | ``"cap"``); ``zero_is_missing`` (False); ``sparsity`` (False) with
    ``lambda_s`` (30) and ``B`` (1).
    """

    algorithm = "oli2ds"
    cost_sensitive = False  # takes rho / alpha_p through own_params, with the code's default
    needs_presence = True
    own_params: ClassVar = {
        "C": (0.01, positive("C")),
        "theta": (8.0, positive("theta")),
        "rho": ("laplace", rho_value),
        "alpha_p": (0.5, alpha_p_value),
        "statistics": ("reference", _choice("statistics", ("reference", "welford"))),
        "cost_in": ("scale", _choice("cost_in", ("scale", "cap"))),
        "zero_is_missing": (False, flag("zero_is_missing")),
        "sparsity": (False, flag("sparsity")),
        "lambda_s": (30.0, positive("lambda_s")),
        "B": (1.0, _fraction_b),
    }
    state_type = Oli2dsState
    params_type = Oli2dsParams
    kernels = (oli2ds_score, oli2ds_update)

    def kernel_params(self) -> Oli2dsParams:
        """The params record the kernels read."""
        p = self.params
        laplace = p["rho"] == "laplace"
        return Oli2dsParams(
            C=float(p["C"]),
            theta=float(p["theta"]),
            rho_laplace=laplace,
            rho=1.0 if laplace else float(p["rho"]),
            alpha_p=float(p["alpha_p"]),
            welford=p["statistics"] == "welford",
            cap=p["cost_in"] == "cap",
            sparsity=bool(p["sparsity"]),
            lambda_s=float(p["lambda_s"]),
            B=float(p["B"]),
        )

    def _init_arrays(self) -> dict[str, np.ndarray]:
        d = self.dim
        return {
            "w": np.zeros(d),
            "mean": np.zeros(d),
            "h": np.zeros(d),
            "cnt": np.zeros(d, dtype=np.int64),
            "last_seen": np.zeros(d, dtype=np.int64),
            "clock": np.zeros(2, dtype=np.int64),
            "class_counts": np.ones(2, dtype=np.int64),
        }

    # --- the contract, on OLI2DS's own kernels --------------------------------------------
    # The driver's step scores before it updates; OLI2DS scores after updating its statistics and
    # reports that score and its own bias, so learn and run call its kernels directly (the state
    # ends in the same bits as through the driver: tests/learners/test_oli2ds.py).

    def score_checked(self, vector: SparseVector) -> float:
        """``s`` for the present features of ``x``; the statistics are not updated."""
        return float(oli2ds_score(self._st, vector[0], vector[1]))

    def learn_checked(self, vector: SparseVector, y: int) -> UpdateInfo:
        self._refuse_if_borrowed()
        s, loss, updated, rho = oli2ds_learn(self._st, self._kernel_params, vector[0], vector[1], y)
        return UpdateInfo(float(s), float(loss), bool(updated), float(rho))

    def _learn_stream(
        self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, ys: np.ndarray,
        scores: np.ndarray, updated: np.ndarray,
    ) -> None:  # fmt: skip
        """``learn`` over the rows that :meth:`_stream_matrix` gave, in one compiled loop."""
        oli2ds_stream(self._st, self._kernel_params, indptr, indices, data, ys, scores, updated)

    @property
    def rho(self) -> float:
        """``ρ`` from the class counts so far (the next label also counts its own class)."""
        return float(oli2ds_rho(self._kernel_params, self._arrays["class_counts"]))

    # --- what the service shows ---------------------------------------------------------

    def present_features(self) -> np.ndarray:
        """Indices present in the last labelled example that had any (``prev``)."""
        stamp = int(self._arrays["clock"][1])
        if stamp == 0:
            return np.empty(0, dtype=np.int64)
        return np.flatnonzero(self._arrays["last_seen"] == stamp)

    def seen_features(self) -> np.ndarray:
        """Indices present in at least one labelled example."""
        return np.flatnonzero(self._arrays["cnt"] > 0)

    def informativeness(self) -> np.ndarray:
        """``h`` of every feature slot (a copy)."""
        return np.array(self._arrays["h"], dtype=np.float64)

    def describe(self) -> dict[str, Any]:
        """Facts for ``GET /models/{name}``: how many features were ever seen, and the features
        present in the last labelled example (``prev``) with their informativeness ``h``, their
        share of the present ``h`` and their weight, most informative first (at most
        :data:`DESCRIBED_FEATURES` of them; the intercept is not listed). Indices are feature
        slots; the service names them."""
        present = self.present_features()
        present = present[present < self.n_features]  # the intercept is not a feature
        h, w = self._arrays["h"], self._arrays["w"]
        total = float(h[present].sum())
        order = present[np.argsort(-h[present], kind="stable")][:DESCRIBED_FEATURES]
        return {
            "features": {
                "seen": int(np.count_nonzero(self.seen_features() < self.n_features)),
                "present": int(present.size),
                "informativeness": [
                    {
                        "index": int(i),
                        "h": float(h[i]),
                        "share": float(h[i] / total) if total > 0.0 else None,
                        "weight": float(w[i]),
                    }
                    for i in order
                ],
            }
        }

    # --- internals ------------------------------------------------------------------------

    def kernel_vector(self, vector: SparseVector) -> SparseVector:
        """The present features of a canonical vector that kept its explicit zeros (OLI2DS reads
        presence), without them under ``zero_is_missing``, the intercept appended."""
        if self.params["zero_is_missing"]:
            keep = vector[1] != 0.0
            if not keep.all():
                vector = (vector[0][keep], vector[1][keep])
        return super().kernel_vector(vector)

    def _vector(self, x: Any) -> SparseVector:
        """The present features of ``x`` (explicit zeros dropped with ``zero_is_missing``), the
        intercept appended."""
        vector = canonical(x, self.n_features, keep_zeros=not self.params["zero_is_missing"])
        if self.params["fit_intercept"]:
            vector = with_intercept(vector, self.n_features, self.params["intercept_value"])
        return vector

    def _stream_matrix(self, X: Any) -> sp.csr_matrix:
        """The rows of ``run``: a dense array has every feature present, a sparse matrix the entries
        it stores (explicit zeros included)."""
        if sp.issparse(X):
            csr = sp.csr_matrix(X, dtype=np.float64, copy=True)
            csr.sum_duplicates()
            csr.sort_indices()
        else:
            dense = np.asarray(X, dtype=np.float64)
            if dense.ndim != 2:
                raise InvalidInput("X", f"must be 2-D, got shape {dense.shape}")
            n, d = dense.shape
            csr = sp.csr_matrix(
                (dense.ravel().copy(), np.tile(np.arange(d, dtype=np.int64), n), np.arange(0, n * d + 1, d)),
                shape=(n, d),
            )
        if csr.shape[1] != self.n_features:
            raise InvalidInput("X", f"has {csr.shape[1]} columns, expected n_features = {self.n_features}")
        if not np.isfinite(csr.data).all():
            raise InvalidInput("X", "contains NaN or inf")
        if self.params["zero_is_missing"]:
            csr.eliminate_zeros()
        if self.params["fit_intercept"]:
            n = csr.shape[0]
            column = sp.csr_matrix(
                (
                    np.full(n, float(self.params["intercept_value"])),
                    np.zeros(n, dtype=np.int64),
                    np.arange(n + 1),
                ),
                shape=(n, 1),
            )
            csr = sp.csr_matrix(sp.hstack([csr, column], format="csr"))
        return csr
