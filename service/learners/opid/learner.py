"""OPID as an online learner: phase C before a declared schema change, phase E after it.

The maths is :mod:`service.learners.opid.reference` (``docs/learners.md`` §10); this
module runs it one label at a time, binary (``c = 1``, target ``y`` in {-1, +1}), cost-weighted.

**Phase C** (the old schema, ``d`` coordinates; the intercept is one of them). Per label::

    G += x x',  H += y x              (and G₊, H₊ when y = +1: O(nnz(x)²))
    c = ρ_u if y = +1 else 1           (ρ_u: the ρ the inverse below is built for)
    u = P x;  k = c u / (1 + c x'u);  w += k (y - w.x);  P -= k u'     (Sherman-Morrison, O(d²))

so that ``P = (G(ρ_u) + r I)⁻¹`` and ``w = P H(ρ_u)``, with ``G(ρ) = G + (ρ-1) G₊`` (the spec's
``ρ G₊ + G₋``). Predictions are ``sign(w.x)``: ridge least squares on everything seen. When the
driver's current ρ (fixed, or the Laplace estimate) differs from ``ρ_u`` by more than
``rho_tolerance`` (relative), P and w are rebuilt from the sums with the current ρ (O(d³))
[decision: a Laplace ρ moves with every label; rebuilding only past 5 % keeps the cost O(d²)
per label but for O(log n / tolerance) rebuilds over a stream]. A fixed ρ never rebuilds.

**The change** (:meth:`OPID.migrate_schema`, a :class:`~service.learners.migration.FeatureMigration`):
Prop. 1 solved once from G(ρ) and H(ρ) with the exact current ρ (O((d + s)³)); Wˢ* is frozen.
The new learner has the new schema's coordinates; ``role`` maps each to its survived position or
marks it augmented (every new coordinate that is not a survivor, so a name registered later in an
open schema is an augmented feature with no past).

**Phase E** (the new schema). Per label, with ``z = xˢ.Wˢ*`` and ``m = [z, z, xᵃ]`` (k = 2 + dₐ)::

    M'M += m m',  M'Y += y m,  Σy² += y²       (and the positive-class sums: O((2 + nnz(xᵃ))²))

and every ``refit_every`` labels (60 [decision]) the E-stage alternation runs on the sums weighted
with the current ρ, giving V (k) and (w₁, w₂). γ is chosen at each refit as the spec chooses it, by
5-fold cross-validation over {1e-2, ..., 1e3}: the sums are kept per fold (label i since the change
in fold i mod 5), so each fold can be held out from sums alone, and the criterion is the held-out
squared error (accuracy would need the rows) [decision]; ``gamma`` set to a number skips it.
Predictions ``m.V`` are linear in x, so ``w`` holds ``Wˢ* (V₁ + V₂)`` on the survivors and
``V₂₊ₐ`` on the augmented coordinates. Until the first refit ``V = e₁``: the prediction is
``xˢ.Wˢ*``, the C-stage model on the survivors. Phase E also keeps the phase-C sums over the new
schema from the change on, so a later change starts from them [decision: "start a new G over
S ∪ A at each change"].

With an intercept, the intercept is a survivor (it feeds z through Wˢ*) and the E-stage also gets a
bias of its own: the constant is appended to xᵃ [decision, beyond the paper, which has no
intercept: without it the E-stage cannot move the threshold of ``z``, and ``python -m
bench.migration`` measured it stuck at one class on german].

The kernels do the per-label work; the O(d³) steps (a rebuild, a refit) they only flag, and the
learner does them with the reference's numpy before the next label, in ``learn`` and in ``run``
alike (so both stay bit-identical, and the refit *is* :func:`.reference.e_stage_fit`).

Memory: ``3 d²`` floats in phase C (G, G₊, P), ``2 d² + 10 k²`` in phase E (five folds of M'M and
M'M₊); a configuration, or a migration, whose phase would exceed ``memory_budget`` is refused.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ...jit_cache import kernel
from ..base import Learner, UpdateInfo, positive, positive_int
from ..covariance import DEFAULT_MEMORY_BUDGET, memory_budget
from ..driver import current_rho, step
from ..errors import InvalidInput, InvalidParameter
from ..first_order import linear_score
from ..migration import FeatureMigration
from . import reference

PHASE_C, PHASE_E = 0, 1

OPIDState = namedtuple(
    "OPIDState",
    [
        "counts",  # [t_p, t_n]
        "w",  # the linear model predictions use (dim)
        "clock",  # [phase, changes so far, labels since the last change, pending work]
        "rho_used",  # [ρ_u: the ρ of P, the ρ of the pending work]
        "gram", "gram_pos", "cross", "cross_pos",  # G, G₊ (dim²), H, H₊ (dim) over this schema
        "inverse",  # P = (G(ρ_u) + r I)⁻¹ in phase C (dim²); 0 x 0 in phase E
        "role",  # phase E: per coordinate, its survived position (>= 0) or -1 - augmented position
        "ws",  # phase E: Wˢ* (s)
        "mm", "mm_pos", "my", "my_pos",  # phase E, per fold: M'M, M'M₊ (5 × k²), M'Y, M'Y₊ (5 × k)
        "yy",  # per fold: [Σ y², Σ₊ y²] (5 × 2)
        "v",  # phase E: V (k)
        "mix",  # phase E: [w₁, w₂, the γ of the last refit]
    ],
)  # fmt: skip

FOLDS = 5
"""The E-stage sums are kept per fold (label ``i`` since the change goes to fold ``i mod 5``), so
that γ can be chosen by 5-fold cross-validation from sums alone."""
NOTHING, REBUILD, REFIT = 0, 1, 2
"""Work a label leaves pending (``clock[3]``): the kernels flag the O(d³) steps, and the learner does
them with the reference's numpy before the next label (:meth:`OPID._settle`)."""


class OPIDParams(NamedTuple):
    """What an OPID update reads."""

    ridge: float  # r, the paper's ρ: the ridge of phase C's model and of Prop. 1
    refit_every: int  # E-stage labels between refits
    rho_tolerance: float  # relative move of ρ that rebuilds phase C's inverse
    intercept: bool  # the last coordinate is the intercept (also the E-stage's own bias)


# --------------------------------------------------------------------------- kernels


@kernel
def add_outer(G: np.ndarray, idx: np.ndarray, val: np.ndarray) -> None:
    """``G += x x'`` on the support of x: O(nnz(x)²)."""
    for a in range(idx.shape[0]):
        row = G[idx[a]]
        va = val[a]
        for b in range(idx.shape[0]):
            row[idx[b]] += va * val[b]


@kernel
def add_scaled_sparse(h: np.ndarray, idx: np.ndarray, val: np.ndarray, scale: float) -> None:
    """``h += scale x`` on the support of x."""
    for a in range(idx.shape[0]):
        h[idx[a]] += scale * val[a]


@kernel
def c_stage_step(st: Any, p: OPIDParams, idx: np.ndarray, val: np.ndarray, y: int,
                 score: float, rho: float) -> None:  # fmt: skip
    """Phase C after the sums took the example: Sherman-Morrison on P and w, or a rebuild flagged."""
    rho_u = st.rho_used[0]
    if abs(rho - rho_u) > p.rho_tolerance * rho_u:
        st.clock[3] = REBUILD
        st.rho_used[1] = rho
        return
    c = rho_u if y > 0 else 1.0
    P, w = st.inverse, st.w
    d = P.shape[0]
    u = np.zeros(d)  # u = P x (P symmetric: a combination of its rows)
    for a in range(idx.shape[0]):
        row = P[idx[a]]
        xa = val[a]
        for i in range(d):
            u[i] += row[i] * xa
    q = 0.0
    for a in range(idx.shape[0]):
        q += val[a] * u[idx[a]]
    den = 1.0 + c * q
    gain = c * (y - score) / den
    scale = c / den
    for i in range(d):
        w[i] += gain * u[i]
        ui = u[i] * scale
        row = P[i]
        for j in range(d):
            row[j] -= ui * u[j]


@kernel
def e_stage_row(st: Any, p: OPIDParams, idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``m = [z, z, xᵃ (, bias)]`` as a sparse pair (positions, values), with ``z = xˢ.Wˢ*``."""
    role, ws = st.role, st.ws
    n_aug = 0
    z = 0.0
    for a in range(idx.shape[0]):
        r = role[idx[a]]
        if r >= 0:
            z += ws[r] * val[a]
        else:
            n_aug += 1
    bias = p.intercept and idx.shape[0] > 0 and idx[idx.shape[0] - 1] == role.shape[0] - 1
    pos = np.empty(2 + n_aug + (1 if bias else 0), np.int64)
    mv = np.empty(pos.shape[0])
    pos[0], pos[1] = 0, 1
    mv[0], mv[1] = z, z
    k = 2
    for a in range(idx.shape[0]):
        r = role[idx[a]]
        if r < 0:
            pos[k] = 2 + (-1 - r)
            mv[k] = val[a]
            k += 1
    if bias:  # the intercept's constant again, in the E-stage's own bias column (the last)
        pos[k] = st.mm.shape[1] - 1
        mv[k] = val[idx.shape[0] - 1]
    return pos, mv


@kernel
def e_stage_step(st: Any, p: OPIDParams, idx: np.ndarray, val: np.ndarray, y: int, rho: float) -> None:
    """Phase E: the example's row of M into its fold's sums; a refit flagged every ``refit_every``."""
    pos, mv = e_stage_row(st, p, idx, val)
    f = st.clock[2] % FOLDS
    add_outer(st.mm[f], pos, mv)
    add_scaled_sparse(st.my[f], pos, mv, float(y))
    st.yy[f, 0] += 1.0
    if y > 0:
        add_outer(st.mm_pos[f], pos, mv)
        add_scaled_sparse(st.my_pos[f], pos, mv, float(y))
        st.yy[f, 1] += 1.0
    st.clock[2] += 1
    if st.clock[2] % p.refit_every == 0:
        st.clock[3] = REFIT
        st.rho_used[1] = rho


@kernel
def opid_update(st: Any, p: OPIDParams, idx: np.ndarray, val: np.ndarray, y: int,
                score: float, rho: float) -> tuple[float, bool]:  # fmt: skip
    """One label: the phase-C sums of this schema, then phase C's or phase E's step."""
    add_outer(st.gram, idx, val)
    add_scaled_sparse(st.cross, idx, val, float(y))
    if y > 0:
        add_outer(st.gram_pos, idx, val)
        add_scaled_sparse(st.cross_pos, idx, val, float(y))
    if st.clock[0] == PHASE_C:
        c_stage_step(st, p, idx, val, y, score, rho)
    else:
        e_stage_step(st, p, idx, val, y, rho)
    return (y - score) ** 2, True


@kernel
def opid_stream(st: Any, p: Any, rho_cfg: Any, indptr: np.ndarray, indices: np.ndarray,
                data: np.ndarray, ys: np.ndarray, scores: np.ndarray, updated: np.ndarray,
                start: int) -> int:  # fmt: skip
    """``driver.learn_stream`` from row ``start``, stopping after a row that leaves work pending;
    returns the next row."""
    for i in range(start, ys.shape[0]):
        a = indptr[i]
        b = indptr[i + 1]
        s, _, upd, _ = step(st, p, rho_cfg, indices[a:b], data[a:b], ys[i])
        scores[i] = s
        updated[i] = upd
        if st.clock[3] != NOTHING:
            return i + 1
    return ys.shape[0]


# --------------------------------------------------------------------------- the learner


def gamma_value(value: Any) -> float | str:
    """``"cv"`` (5-fold cross-validation over the spec's grid at every refit) or a number > 0."""
    if value == "cv":
        return "cv"
    return positive("gamma")(value)


class OPID(Learner):
    """OPID (Hou & Zhou): least squares on the old schema, then the C-stage model extended to the
    new one; see the module docstring for both phases and :meth:`migrate_schema` for the change."""

    algorithm = "opid"
    own_params: ClassVar = {
        "lam": (1.0, positive("lam")),
        "ridge": (1.0, positive("ridge")),
        "gamma": ("cv", gamma_value),
        "refit_every": (60, positive_int("refit_every")),
        "rho_tolerance": (0.05, positive("rho_tolerance")),
        "memory_budget": (DEFAULT_MEMORY_BUDGET, memory_budget),
    }
    state_type = OPIDState
    params_type = OPIDParams
    kernels = (linear_score, opid_update)

    def _check_params(self) -> None:
        need = 3 * self.dim * self.dim * 8
        budget = self.params["memory_budget"]
        if need > budget:
            raise InvalidParameter(
                "n_features",
                f"opid keeps three dense {self.dim} x {self.dim} matrices (G, G₊ and (G + rI)⁻¹): "
                f"{need / 2**20:.1f} MiB, over the memory budget of {budget / 2**20:.1f} MiB. "
                "Raise memory_budget, or use a model that needs O(d) memory.",
            )

    def kernel_params(self) -> OPIDParams:
        p = self.params
        return OPIDParams(
            float(p["ridge"]), int(p["refit_every"]), float(p["rho_tolerance"]), bool(p["fit_intercept"])
        )

    def _init_arrays(self) -> dict[str, np.ndarray]:
        d = self.dim
        rho = float(current_rho(self._rho_cfg, np.zeros(2, np.int64)))
        return {
            "w": np.zeros(d),
            "clock": np.zeros(4, np.int64),
            "rho_used": np.array([rho, rho]),
            "gram": np.zeros((d, d)),
            "gram_pos": np.zeros((d, d)),
            "cross": np.zeros(d),
            "cross_pos": np.zeros(d),
            "inverse": np.eye(d) / self.params["ridge"],
            "role": np.zeros(0, np.int64),
            "ws": np.zeros(0),
            "mm": np.zeros((FOLDS, 0, 0)),
            "mm_pos": np.zeros((FOLDS, 0, 0)),
            "my": np.zeros((FOLDS, 0)),
            "my_pos": np.zeros((FOLDS, 0)),
            "yy": np.zeros((FOLDS, 2)),
            "v": np.zeros(0),
            "mix": np.array([0.5, 0.5, np.nan]),
        }

    # --- phases -----------------------------------------------------------------------------

    @property
    def phase(self) -> str:
        """``"C"`` before the first declared change, ``"E"`` after it."""
        return "C" if int(self._arrays["clock"][0]) == PHASE_C else "E"

    @property
    def labels_since_change(self) -> int:
        return int(self._arrays["clock"][2]) if self.phase == "E" else int(self._arrays["counts"].sum())

    def describe(self) -> dict[str, Any]:
        a = self._arrays
        facts: dict[str, Any] = {
            "phase": self.phase,
            "changes": int(a["clock"][1]),
            "labels_since_change": self.labels_since_change,
        }
        if self.phase == "C":
            facts["rho_in_use"] = float(a["rho_used"][0])
        else:
            facts["survived"] = int(a["ws"].size)
            facts["augmented"] = int(a["v"].size - 2 - (1 if self.params["fit_intercept"] else 0))
            facts["refits"] = int(a["clock"][2]) // int(self.params["refit_every"])
            facts["mix"] = [float(a["mix"][0]), float(a["mix"][1])]
            facts["gamma"] = None if np.isnan(a["mix"][2]) else float(a["mix"][2])
        return {"opid": facts}

    def migrate_schema(self, migration: FeatureMigration) -> OPID:
        """The declared change: Prop. 1 solved once with the current ρ, then phase E on the new
        schema. The learner itself is left as it was."""
        a = self._arrays
        src = migration.over_dims(bool(self.params["fit_intercept"]))
        survived_new = np.flatnonzero(src >= 0)
        survived_old = src[survived_new]
        rho = self.rho
        G = a["gram"] + (rho - 1.0) * a["gram_pos"]
        H = (a["cross"] + (rho - 1.0) * a["cross_pos"])[:, None]
        solution = reference.c_stage_solve(G, H, survived_old, self.params["lam"], self.params["ridge"])
        new = OPID(migration.n_new, **self.params)
        d = new.dim
        intercept = bool(self.params["fit_intercept"])
        k = 2 + int(np.sum(src < 0)) + (1 if intercept else 0)
        need = 8 * (2 * d * d + 2 * FOLDS * k * k)
        if need > self.params["memory_budget"]:
            raise InvalidParameter(
                "n_features",
                f"opid's phase E on the new schema keeps {need / 2**20:.1f} MiB (G, G₊ over {d} "
                f"coordinates, five folds of M'M over {k}), over the memory budget of "
                f"{self.params['memory_budget'] / 2**20:.1f} MiB",
            )
        role = np.empty(d, np.int64)
        role[survived_new] = np.arange(survived_new.size)
        augmented = np.flatnonzero(src < 0)
        role[augmented] = -1 - np.arange(augmented.size)
        arrays = {
            **new._arrays,
            "counts": a["counts"].copy(),
            "clock": np.array([PHASE_E, a["clock"][1] + 1, 0, NOTHING], np.int64),
            "rho_used": np.array([rho, rho]),
            "inverse": np.zeros((0, 0)),
            "role": role,
            "ws": np.ascontiguousarray(solution.W_survived[:, 0]),
            "mm": np.zeros((FOLDS, k, k)),
            "mm_pos": np.zeros((FOLDS, k, k)),
            "my": np.zeros((FOLDS, k)),
            "my_pos": np.zeros((FOLDS, k)),
            "v": np.eye(1, k)[0],
            "mix": np.array([0.5, 0.5, np.nan]),
        }
        new._install(arrays)
        new._set_e_stage_weights()
        return new

    # --- the O(d³) work the kernels leave pending -----------------------------------------------

    def learn_checked(self, vector: tuple[np.ndarray, np.ndarray], y: int) -> UpdateInfo:
        info = super().learn_checked(vector, y)
        self._settle()
        return info

    def _learn_stream(
        self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, ys: np.ndarray,
        scores: np.ndarray, updated: np.ndarray,
    ) -> None:  # fmt: skip
        row = 0
        while row < ys.shape[0]:
            row = opid_stream(
                self._st, self._kernel_params, self._rho_cfg, indptr, indices, data, ys, scores, updated, row
            )  # fmt: skip
            self._settle()

    def _settle(self) -> None:
        """Do the work the last label left pending, with the ρ of that label: rebuild phase C's
        inverse, or refit the E-stage. Between labels nothing is ever pending."""
        a = self._arrays
        pending = int(a["clock"][3])
        if pending == REBUILD:
            self._rebuild(float(a["rho_used"][1]))
        elif pending == REFIT:
            self._refit(float(a["rho_used"][1]))
        a["clock"][3] = NOTHING

    def _rebuild(self, rho: float) -> None:
        """``P = (G(ρ) + r I)⁻¹`` (made exactly symmetric, as Sherman-Morrison keeps it) and
        ``w = P H(ρ)`` from the sums; ``ρ_u = ρ``."""
        a = self._arrays
        A = a["gram"] + (rho - 1.0) * a["gram_pos"] + self.params["ridge"] * np.eye(self.dim)
        P = np.linalg.inv(A)
        a["inverse"][...] = 0.5 * (P + P.T)
        a["w"][...] = a["inverse"] @ (a["cross"] + (rho - 1.0) * a["cross_pos"])
        a["rho_used"][0] = rho

    def _refit(self, rho: float) -> None:
        """The E-stage from the fold sums weighted with ρ (:mod:`.reference`): γ by 5-fold CV unless
        fixed, then the alternation on all the sums."""
        a = self._arrays
        extra = rho - 1.0
        folds = [
            (a["mm"][f] + extra * a["mm_pos"][f], (a["my"][f] + extra * a["my_pos"][f])[:, None],
             float(a["yy"][f, 0] + extra * a["yy"][f, 1]))
            for f in range(FOLDS)
        ]  # fmt: skip
        gamma = self.params["gamma"]
        if gamma == "cv":
            gamma, _ = reference.e_stage_cv(folds, 1)
        fit = reference.e_stage_fit(
            sum(f[0] for f in folds), sum(f[1] for f in folds), sum(f[2] for f in folds), 1, float(gamma)
        )
        a["v"][...] = fit.V[:, 0]
        a["mix"][...] = (fit.w1, fit.w2, gamma)
        self._set_e_stage_weights()

    def _set_e_stage_weights(self) -> None:
        """``w``: ``Wˢ* (V₁ + V₂)`` on the survivors, ``V₂₊ₐ`` on the augmented coordinates, plus the
        E-stage's own bias (the last entry of V) on the intercept."""
        a = self._arrays
        role, v = a["role"], a["v"]
        kept = role >= 0
        a["w"][kept] = a["ws"][role[kept]] * (v[0] + v[1])
        a["w"][~kept] = v[1 - role[~kept]]
        if self.params["fit_intercept"]:
            a["w"][-1] += v[-1]

    # --- state --------------------------------------------------------------------------------

    def _install(self, arrays: dict[str, np.ndarray]) -> None:
        self._arrays = arrays
        self._st = self.state_type(**arrays)

    def _state_templates(self, state: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        """The dtype and shape of every array of ``state``, from its own phase (``np.empty``: no
        memory is touched)."""
        d = self.dim
        shapes: dict[str, tuple[tuple[int, ...], type]] = {
            "counts": ((2,), np.int64), "w": ((d,), np.float64), "clock": ((4,), np.int64),
            "rho_used": ((2,), np.float64), "gram": ((d, d), np.float64), "gram_pos": ((d, d), np.float64),
            "cross": ((d,), np.float64), "cross_pos": ((d,), np.float64), "inverse": ((d, d), np.float64),
            "role": ((0,), np.int64), "ws": ((0,), np.float64), "mm": ((FOLDS, 0, 0), np.float64),
            "mm_pos": ((FOLDS, 0, 0), np.float64), "my": ((FOLDS, 0), np.float64),
            "my_pos": ((FOLDS, 0), np.float64), "yy": ((FOLDS, 2), np.float64), "v": ((0,), np.float64),
            "mix": ((3,), np.float64),
        }  # fmt: skip
        clock = np.asarray(state.get("clock", np.zeros(0)))
        if clock.shape == (4,) and clock.dtype == np.int64 and int(clock[3]) != NOTHING:
            raise InvalidInput("state", "has work pending (a state is only taken between labels)")
        if clock.shape == (4,) and clock.dtype == np.int64 and int(clock[0]) == PHASE_E:
            role = np.asarray(state.get("role", np.zeros(0, np.int64)))
            if role.shape != (d,) or role.dtype != np.int64:
                raise InvalidInput("state", f"'role' has {role.dtype}{role.shape}, expected int64({d},)")
            survived, augmented = role[role >= 0], -1 - role[role < 0]
            s = survived.size
            if not (
                np.array_equal(np.sort(survived), np.arange(s))
                and np.array_equal(np.sort(augmented), np.arange(d - s))
            ):
                raise InvalidInput("state", "'role' does not number the survived and augmented coordinates")
            k = 2 + d - s + (1 if self.params["fit_intercept"] else 0)
            shapes.update(
                inverse=((0, 0), np.float64), role=((d,), np.int64), ws=((s,), np.float64),
                mm=((FOLDS, k, k), np.float64), mm_pos=((FOLDS, k, k), np.float64),
                my=((FOLDS, k), np.float64), my_pos=((FOLDS, k), np.float64), v=((k,), np.float64),
            )  # fmt: skip
        return {name: np.empty(shape, dtype) for name, (shape, dtype) in shapes.items()}


__all__ = ["OPID", "OPIDParams", "OPIDState"]
