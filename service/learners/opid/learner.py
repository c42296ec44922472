"""OPID as an online learner: phase C before a declared schema change, phase E after it.

The maths is :mod:`service.learners.opid.reference` (``algorithms-round2.md`` section 3); this
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

Memory: ``3 d²`` floats in phase C (G, G₊, P), ``2 d² + 10 k²`` in phase E (five folds of M'M and
M'M₊); a configuration, or a migration, whose phase would exceed ``memory_budget`` is refused.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ...jit_cache import kernel
from ..base import Learner, positive, positive_int
from ..covariance import DEFAULT_MEMORY_BUDGET, memory_budget
from ..driver import current_rho
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
        "clock",  # [phase, changes so far, labels since the last change]
        "rho_used",  # [ρ_u]: the ρ of P (phase C)
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

PHASE_C_ONLY = ("inverse",)
FOLDS = 5
"""The E-stage sums are kept per fold (label ``i`` since the change goes to fold ``i mod 5``), so
that γ can be chosen by 5-fold cross-validation from sums alone."""
GAMMAS = np.array(reference.GAMMAS)


class OPIDParams(NamedTuple):
    """What an OPID update reads."""

    intercept: bool  # the last coordinate is the intercept (also the E-stage's own bias)
    ridge: float  # r, the paper's ρ: the ridge of phase C's model and of Prop. 1
    gamma_cv: bool  # γ by 5-fold cross-validation over GAMMAS at every refit
    gamma: float  # γ, the E-stage regulariser, when not cross-validated
    refit_every: int  # E-stage labels between refits
    rho_tolerance: float  # relative move of ρ that rebuilds phase C's inverse


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
def rebuild_inverse(st: Any, rho: float, ridge: float) -> None:
    """``P = (G(ρ) + r I)⁻¹`` and ``w = P H(ρ)`` from the sums (O(d³)); ``ρ_u = ρ``."""
    d = st.gram.shape[0]
    A = st.gram + (rho - 1.0) * st.gram_pos
    for i in range(d):
        A[i, i] += ridge
    P = np.linalg.inv(A)
    for i in range(d):  # exactly symmetric, as the Sherman-Morrison steps keep it
        for j in range(i + 1, d):
            mean = 0.5 * (P[i, j] + P[j, i])
            P[i, j] = mean
            P[j, i] = mean
    st.inverse[:, :] = P
    h = st.cross + (rho - 1.0) * st.cross_pos
    st.w[:] = P @ h
    st.rho_used[0] = rho


@kernel
def c_stage_step(st: Any, p: OPIDParams, idx: np.ndarray, val: np.ndarray, y: int,
                 score: float, rho: float) -> None:  # fmt: skip
    """Phase C after the sums took the example: Sherman-Morrison on P and w, or a rebuild."""
    rho_u = st.rho_used[0]
    if abs(rho - rho_u) > p.rho_tolerance * rho_u:
        rebuild_inverse(st, rho, p.ridge)
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
def solve_with_penalty(MM: np.ndarray, MY: np.ndarray, penalty: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Prop. 4: ``(M'M + diag(penalty)) V = M'Y`` over the kept coordinates, 0 elsewhere."""
    k = MM.shape[0]
    V = np.zeros(k)
    idx = np.flatnonzero(keep)
    n = idx.shape[0]
    A = np.empty((n, n))
    b = np.empty(n)
    for i in range(n):
        for j in range(n):
            A[i, j] = MM[idx[i], idx[j]]
        A[i, i] += penalty[idx[i]]
        b[i] = MY[idx[i]]
    sol = np.linalg.solve(A, b)
    for i in range(n):
        V[idx[i]] = sol[i]
    return V


@kernel
def e_stage_alternation(
    MM: np.ndarray, MY: np.ndarray, YY: float, gamma: float
) -> tuple[np.ndarray, float, float]:
    """The E-stage alternation for c = 1 (:func:`reference.e_stage_fit`): ``(V, w₁, w₂)``."""
    k = MM.shape[0]
    rest = k - 1  # c + dₐ
    w1, w2 = 0.5, 0.5
    V = np.zeros(k)
    previous = 0.0
    penalty = np.empty(k)
    keep = np.ones(k, np.bool_)
    for rounds in range(reference.MAX_ROUNDS):
        keep[0] = w1 > 0.0
        penalty[0] = gamma / w1 if w1 > 0.0 else 0.0
        for i in range(1, k):
            keep[i] = w2 > 0.0
            penalty[i] = gamma / (rest * w2) if w2 > 0.0 else 0.0
        V = solve_with_penalty(MM, MY, penalty, keep)
        a = abs(V[0])
        b = np.sqrt(np.sum(V[1:] ** 2) / rest)
        if a + b > 0.0:
            w1, w2 = a / (a + b), b / (a + b)
        J = V @ (MM @ V) - 2.0 * (V @ MY) + YY + gamma * (a + b) ** 2
        if rounds > 0 and abs(J - previous) <= reference.TOLERANCE * max(1.0, J):
            break
        previous = J
    return V, w1, w2


@kernel
def e_stage_weights(st: Any, intercept: bool) -> None:
    """``w``: ``Wˢ* (V₁ + V₂)`` on the survivors, ``V₂₊ₐ`` on the augmented coordinates, plus the
    E-stage's own bias on the intercept."""
    role, ws, v, w = st.role, st.ws, st.v, st.w
    both = v[0] + v[1]
    for j in range(w.shape[0]):
        r = role[j]
        w[j] = ws[r] * both if r >= 0 else v[2 + (-1 - r)]
    if intercept:
        w[w.shape[0] - 1] += v[v.shape[0] - 1]


@kernel
def held_out_error(MM: np.ndarray, MY: np.ndarray, YY: float, V: np.ndarray) -> float:
    """``||M V - Y||²`` over a fold, from its sums."""
    return V @ (MM @ V) - 2.0 * (V @ MY) + YY


@kernel
def e_stage_refit(st: Any, p: OPIDParams, rho: float) -> None:
    """Refit V and (w₁, w₂) from the sums weighted with the current ρ; γ by 5-fold CV (the least
    held-out squared error over the folds; ties go to the smaller γ) unless it is fixed."""
    extra = rho - 1.0
    MM = st.mm[0] + extra * st.mm_pos[0]
    MY = st.my[0] + extra * st.my_pos[0]
    YY = st.yy[0, 0] + extra * st.yy[0, 1]
    for f in range(1, FOLDS):
        MM += st.mm[f] + extra * st.mm_pos[f]
        MY += st.my[f] + extra * st.my_pos[f]
        YY += st.yy[f, 0] + extra * st.yy[f, 1]
    gamma = p.gamma
    if p.gamma_cv:
        best = np.inf
        for g in GAMMAS:
            error = 0.0
            for f in range(FOLDS):
                fold_MM = st.mm[f] + extra * st.mm_pos[f]
                fold_MY = st.my[f] + extra * st.my_pos[f]
                fold_YY = st.yy[f, 0] + extra * st.yy[f, 1]
                V, _, _ = e_stage_alternation(MM - fold_MM, MY - fold_MY, YY - fold_YY, g)
                error += held_out_error(fold_MM, fold_MY, fold_YY, V)
            if error < best:
                best, gamma = error, g
    V, w1, w2 = e_stage_alternation(MM, MY, YY, gamma)
    st.v[:] = V
    st.mix[0], st.mix[1], st.mix[2] = w1, w2, gamma
    e_stage_weights(st, p.intercept)


@kernel
def e_stage_step(st: Any, p: OPIDParams, idx: np.ndarray, val: np.ndarray, y: int, rho: float) -> None:
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
        e_stage_refit(st, p, rho)


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
            bool(p["fit_intercept"]),
            float(p["ridge"]),
            p["gamma"] == "cv",
            float("nan") if p["gamma"] == "cv" else float(p["gamma"]),
            int(p["refit_every"]),
            float(p["rho_tolerance"]),
        )

    def _init_arrays(self) -> dict[str, np.ndarray]:
        d = self.dim
        rho = float(current_rho(self._rho_cfg, np.zeros(2, np.int64)))
        return {
            "w": np.zeros(d),
            "clock": np.zeros(3, np.int64),
            "rho_used": np.array([rho]),
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
            "clock": np.array([PHASE_E, a["clock"][1] + 1, 0], np.int64),
            "rho_used": np.array([rho]),
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
        w = np.empty(d)  # what e_stage_weights computes: Wˢ* (V₁ + V₂) on survivors, V₂₊ₐ elsewhere
        kept = role >= 0
        w[kept] = arrays["ws"][role[kept]] * (arrays["v"][0] + arrays["v"][1])
        w[~kept] = arrays["v"][1 - role[~kept]]
        if intercept:
            w[-1] += arrays["v"][-1]
        arrays["w"] = w
        new._install(arrays)
        return new

    # --- state --------------------------------------------------------------------------------

    def _install(self, arrays: dict[str, np.ndarray]) -> None:
        self._arrays = arrays
        self._st = self.state_type(**arrays)

    def _state_templates(self, state: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        """The dtype and shape of every array of ``state``, from its own phase (``np.empty``: no
        memory is touched)."""
        d = self.dim
        shapes: dict[str, tuple[tuple[int, ...], type]] = {
            "counts": ((2,), np.int64), "w": ((d,), np.float64), "clock": ((3,), np.int64),
            "rho_used": ((1,), np.float64), "gram": ((d, d), np.float64), "gram_pos": ((d, d), np.float64),
            "cross": ((d,), np.float64), "cross_pos": ((d,), np.float64), "inverse": ((d, d), np.float64),
            "role": ((0,), np.int64), "ws": ((0,), np.float64), "mm": ((FOLDS, 0, 0), np.float64),
            "mm_pos": ((FOLDS, 0, 0), np.float64), "my": ((FOLDS, 0), np.float64),
            "my_pos": ((FOLDS, 0), np.float64), "yy": ((FOLDS, 2), np.float64), "v": ((0,), np.float64),
            "mix": ((3,), np.float64),
        }  # fmt: skip
        clock = np.asarray(state.get("clock", np.zeros(0)))
        if clock.shape == (3,) and clock.dtype == np.int64 and int(clock[0]) == PHASE_E:
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
