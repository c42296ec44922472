"""``eta = "auto"``: online learning-rate selection over a grid, without hindsight.

The paper picks ``eta`` per data set from the whole stream's results; a service cannot.
:class:`EtaGrid` runs ``K`` members of one algorithm, member ``k`` with ``eta = grid[k]``
(default ``{0.3, 1, 3, 10, 30}``, chosen by ``python -m bench.quality --study``: on L2-normalised
streams it beat the decade grid ``{0.01, ..., 100}`` on mean sum and mean cost over the
nine benchmark data sets, see ``docs/benchmarks.md``). Every member learns every label. Each member's
*own* online predictions (made before it learns each label) give it running counts
``T_p, T_n, M_p, M_n`` and so a running value of the model's objective:

- ``sum``: ``alpha_p * sens + alpha_n * spec`` (higher is better; a class not seen yet
  contributes its share as if perfect, so an early stream does not favour a member by
  accident of NaN);
- ``cost``: ``c_p * M_p + c_n * M_n`` (lower is better).

With ``losses`` (``loss="auto"`` in :func:`service.learners.create`) the members also span
the losses: ``K = len(losses) * len(grid)`` members, loss-major in the order given (loss II
first by default), so that ``python -m bench.quality --study`` measured: members over both losses
beat VW on mean cost where loss II alone did not.

The ensemble predicts with the **leader**: the member with the best objective over the
labels so far (``selection="leader"``) or over the last ``window`` labels only
(``selection="window"``, for drifting streams). Ties go to the earlier member in the grid;
objectives within a relative ``1e-12`` of the best count as tied, so that floating-point
rounding cannot break a tie that is exact in the counts (with ``c_p = 0.9``, nine false
alarms cost exactly one missed anomaly, but ``9 * (1 - 0.9)`` is not ``0.9`` in floating point).
The selection is a function of the counts alone, so it is deterministic and survives a
checkpoint exactly: the state holds every member.

**Nonlinear members** (``members="all"``, issue 20): for ``d <= NONLINEAR_MAX_FEATURES`` (32) the
candidates also hold a *family* over a feature map (:mod:`service.learners.nonlinear`) that spans
the same losses and grid: ACOG-diag over the quadratic features ``D = d + d (d + 1) / 2`` (the
degree-2 polynomial kernel ``x . x' + (x . x')^2``). Its members come after the linear ones, so a
tie still goes to a linear member. Above the threshold, and with ``members="linear"`` (the
default), the ensemble is the linear one, bit for bit. Memory: a diagonal Sigma and ``w`` over
``D + 1`` coordinates per member, 9 KB at ``d = 32``. Cost per label: ``O(nnz(x)^2)`` per member
against the linear ACOG members' ``O(d^2)``; ``python -m bench.ensemble_cost`` measures the ratio
to the linear ensemble at several ``d`` (docs/benchmarks.md). At ``d = 32`` the quadratic map
already has 560 coordinates; beyond it the ratio grows with ``d`` and VW's ``-q`` row shows
its gains on the low-dimensional streams (``d <= 19``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from .base import STATE_FORMAT, Learner, StreamResult, UpdateInfo, read_only
from .covariance import check_sigma_fits
from .errors import InvalidInput, InvalidParameter, StateBorrowed
from .inputs import SparseVector
from .migration import FeatureMigration, migrate
from .nonlinear import FOGD, Quadratic, check_map_fits, mapped_dimension

DEFAULT_GRID = (0.3, 1.0, 3.0, 10.0, 30.0)
NONLINEAR_MAX_FEATURES = 32
"""``members="all"`` adds the nonlinear families only for ``d <=`` this (see the module docstring)."""
Members = Literal["linear", "all"]
Family = tuple[type[Learner], dict[str, Any]]
NONLINEAR_FAMILIES: tuple[Family, ...] = ((Quadratic, {"update": "acog-diag"}),)
"""Random Fourier features (``FOGD``, ``D = 200``) are left out: at ``d <= 16`` they cost 5x the
quadratic family per label (``200 d`` cosines and products against ``d^2 / 2`` products)."""
RFF_FAMILY: Family = (FOGD, {"update": "acog-diag", "n_components": 200, "seed": 0})


def families_for(members: Any, n_features: int) -> tuple[Family, ...]:
    """The nonlinear families of ``members`` (``"linear"`` or ``"all"``) at dimension ``d``."""
    if members not in ("linear", "all"):
        raise InvalidParameter("members", f'must be "linear" or "all", got {members!r}')
    return NONLINEAR_FAMILIES if members == "all" and n_features <= NONLINEAR_MAX_FEATURES else ()


def family_name(family: Family) -> str:
    """``"quadratic/acog-diag"``: the map's learner and the learner over the map."""
    cls, options = family
    return f"{cls.algorithm}/{options.get('update', 'ogd')}"


Objective = Literal["sum", "cost"]
Selection = Literal["leader", "window"]


def objective_values(counts: np.ndarray, objective: Objective, alpha_p: float, c_p: float) -> np.ndarray:
    """Per-member objective, higher is better. ``counts`` is ``(..., K, 4)`` of ``t_p, t_n, m_p, m_n``."""
    t_p, t_n, m_p, m_n = (counts[..., i].astype(np.float64) for i in range(4))
    if objective == "cost":
        return -(c_p * m_p + (1.0 - c_p) * m_n)
    with np.errstate(invalid="ignore", divide="ignore"):
        sens = np.where(t_p > 0, (t_p - m_p) / t_p, 1.0)
        spec = np.where(t_n > 0, (t_n - m_n) / t_n, 1.0)
    return alpha_p * sens + (1.0 - alpha_p) * spec


TIE_TOLERANCE = 1e-12


def best_member(values: np.ndarray) -> Any:
    """Index (along the last axis) of the best objective; near-ties go to the earliest member."""
    top = values.max(axis=-1, keepdims=True)
    return np.argmax(values >= top - TIE_TOLERANCE * np.maximum(1.0, np.abs(top)), axis=-1)


class EtaGrid:
    """K learners that differ only in ``eta`` (and the loss, with ``losses``); predictions
    follow the best so far."""

    def __init__(
        self,
        algorithm: type[Learner],
        n_features: int,
        *,
        grid: Sequence[float] = DEFAULT_GRID,
        objective: Objective = "sum",
        alpha_p: float = 0.5,
        c_p: float = 0.9,
        selection: Selection = "leader",
        window: int = 1000,
        losses: Sequence[str] | None = None,
        families: Sequence[Family] = (),
        **params: Any,
    ) -> None:
        if "eta" not in algorithm.param_spec():
            raise InvalidParameter("eta", f'{algorithm.algorithm} has no learning rate to set to "auto"')
        values = [float(v) for v in grid]
        if (
            not values
            or any(not (math.isfinite(v) and v > 0) for v in values)
            or len(set(values)) != len(values)
        ):
            raise InvalidParameter("eta_grid", f"must be distinct finite numbers > 0, got {list(grid)!r}")
        if objective not in ("sum", "cost"):
            raise InvalidParameter("objective", f'must be "sum" or "cost", got {objective!r}')
        if selection not in ("leader", "window"):
            raise InvalidParameter("selection", f'must be "leader" or "window", got {selection!r}')
        if not 0.0 < c_p < 1.0:
            raise InvalidParameter("c_p", f"must lie in (0, 1), got {c_p!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise InvalidParameter("window", f"must be an integer >= 1, got {window!r}")
        if losses is not None:
            if "loss" not in algorithm.param_spec():
                raise InvalidParameter("loss", f'{algorithm.algorithm} has no loss to set to "auto"')
            if not losses or len(set(losses)) != len(losses) or not set(losses) <= {"I", "II"}:
                raise InvalidParameter(
                    "loss", f'the losses of "auto" must be distinct "I"/"II", got {losses!r}'
                )
        member_losses: Sequence[str | None] = losses if losses is not None else [None]
        configs = [(loss, eta) for loss in member_losses for eta in values]
        if "memory_budget" in algorithm.param_spec():
            dim = n_features + (1 if params.get("fit_intercept") else 0)
            budget = params.get("memory_budget", algorithm.param_spec()["memory_budget"][0])
            if "update" not in algorithm.param_spec():
                check_sigma_fits(algorithm.algorithm, dim, budget, copies=len(configs))
            else:  # a map's learner: its map's arrays, and Sigma over the mapped coordinates
                check_map_fits(algorithm.algorithm, n_features, params, copies=len(configs))
                if params.get("update") == "acog":
                    dim += mapped_dimension(algorithm.algorithm, n_features, params) - n_features
                    check_sigma_fits(f"{algorithm.algorithm} (update acog)", dim, budget, copies=len(configs))
        if "rho" in algorithm.param_spec():
            params["alpha_p"] = alpha_p
        self.members = [
            algorithm(n_features, eta=eta, **params, **({} if loss is None else {"loss": loss}))
            for loss, eta in configs
        ]
        self.families = tuple(families)
        for cls, options in self.families:
            shared = {k: v for k, v in params.items() if k in cls.param_spec()}
            if options.get("update") == "acog":
                dim = mapped_dimension(cls.algorithm, n_features, options) + (
                    1 if shared.get("fit_intercept") else 0
                )
                budget = shared.get("memory_budget", cls.param_spec()["memory_budget"][0])
                check_sigma_fits(cls.algorithm, dim, budget, copies=len(configs))
            self.members += [
                cls(n_features, eta=eta, **shared, **options, **({} if loss is None else {"loss": loss}))
                for loss, eta in configs
            ]
        member_configs = configs * (1 + len(self.families))
        self.member_algorithms = [algorithm.algorithm] * len(configs) + [
            family_name(f) for f in self.families for _ in configs
        ]
        self.configs = [
            (m.params.get("loss"), eta) for m, (_, eta) in zip(self.members, member_configs, strict=True)
        ]
        self.grid = tuple(values)
        self.losses = tuple(losses) if losses is not None else None
        self.algorithm = f"auto:{algorithm.algorithm}"
        self.n_features = n_features
        self.objective: Objective = objective
        self.alpha_p = alpha_p
        self.c_p = c_p
        self.selection: Selection = selection
        self.window = window
        k = len(self.members)
        self._counts = np.zeros((k, 4), dtype=np.int64)  # all-time, per member
        self._window_counts = np.zeros((k, 4), dtype=np.int64)  # over the last `window` labels
        self._recent = np.zeros((window, k, 4), dtype=np.int8)  # ring of per-label increments
        self._cursor = np.zeros(2, dtype=np.int64)  # [next slot, labels seen]
        self._leader: int | None = None  # cache of leader(); None once the counts change
        self._borrows = 0

    # --- selection ------------------------------------------------------------------------

    def leader(self) -> int:
        """Index of the member that predicts now (recomputed only after the counts change)."""
        if self._leader is None:
            counts = self._counts if self.selection == "leader" else self._window_counts
            self._leader = int(best_member(objective_values(counts, self.objective, self.alpha_p, self.c_p)))
        return self._leader

    @property
    def eta(self) -> float:
        """The learning rate in use."""
        return self.configs[self.leader()][1]

    @property
    def loss(self) -> str | None:
        """The loss in use (None for an algorithm without one)."""
        return self.configs[self.leader()][0]

    def describe(self) -> dict[str, Any]:
        """``{"eta": {"selected", "loss", "leader", "members"}}``: the rate and loss in use, the
        leading member's index and every member's loss, eta and objectives
        (:meth:`member_objectives`), plus the leader's own facts (its ``"sketch"``, say)."""
        leader = self.leader()
        eta = {"selected": self.eta, "loss": self.loss, "leader": leader, "members": self.member_objectives()}
        return {**self.members[leader].describe(), "eta": eta}

    def member_objectives(self) -> list[dict[str, Any]]:
        """Each member's loss, eta and running objective (all-time and over the window)."""
        all_time = objective_values(self._counts, self.objective, self.alpha_p, self.c_p)
        windowed = objective_values(self._window_counts, self.objective, self.alpha_p, self.c_p)
        sign = -1.0 if self.objective == "cost" else 1.0
        out = [
            {"loss": loss, "eta": eta, "objective": sign * float(a), "window_objective": sign * float(w)}
            for (loss, eta), a, w in zip(self.configs, all_time, windowed, strict=True)
        ]
        if self.families:  # which learner each member is, once there is more than one
            for member, name in zip(out, self.member_algorithms, strict=True):
                member["algorithm"] = name
        return out

    # --- the learner contract -------------------------------------------------------------

    def score(self, x: Any) -> float:
        return self.members[self.leader()].score(x)

    def predict(self, x: Any) -> int:
        return 1 if self.score(x) >= 0.0 else -1

    def score_unchecked(self, vector: SparseVector) -> float:
        return self.members[self.leader()].score_unchecked(vector)

    def learn(self, x: Any, y: Any) -> UpdateInfo:
        self._refuse_if_borrowed()
        vector, label = self.members[0].checked(x, y)  # once for all: members share the input form
        return self._learn_members(vector, label)

    def learn_unchecked(self, vector: SparseVector, y: int) -> UpdateInfo:
        self._refuse_if_borrowed()
        return self._learn_members(self.members[0].kernel_vector(vector), y)

    def _learn_members(self, vector: SparseVector, label: int) -> UpdateInfo:
        chosen = self.leader()
        infos = [m.learn_checked(vector, label) for m in self.members]
        step = np.zeros((len(infos), 4), dtype=np.int8)
        for k, info in enumerate(infos):
            wrong = info.prediction != label
            step[k] = (1, 0, wrong, 0) if label == 1 else (0, 1, 0, wrong)
        self._record(step)
        lead = infos[chosen]
        return UpdateInfo(lead.score, lead.loss, any(i.updated for i in infos), lead.rho)

    def _record(self, step: np.ndarray) -> None:
        self._leader = None
        slot = int(self._cursor[0])
        self._counts += step
        self._window_counts += step.astype(np.int64) - self._recent[slot]
        self._recent[slot] = step
        self._cursor[0] = (slot + 1) % self.window
        self._cursor[1] += 1

    def run(self, X: Any, y: Any) -> StreamResult:
        """Progressive validation; bit-identical to :meth:`learn` row by row (state included).

        The members are independent, so each runs its whole stream at native speed; the
        leader before every row then follows from cumulative counts.
        """
        self._refuse_if_borrowed()
        results = [m.run(X, y) for m in self.members]
        labels = np.asarray(y).astype(np.int64)
        n, k = labels.shape[0], len(results)
        pos = labels == 1
        steps = np.zeros((n, k, 4), dtype=np.int8)
        for j, r in enumerate(results):
            wrong = r.predictions != labels
            steps[:, j] = np.stack([pos, ~pos, pos & wrong, ~pos & wrong], axis=1)
        if self.selection == "leader":
            before = self._counts + np.cumsum(steps, axis=0, dtype=np.int64) - steps
        else:  # the ring's content, oldest first, then this stream: window sums by differences
            slot = int(self._cursor[0])
            history = np.concatenate([np.roll(self._recent, -slot, axis=0), steps]).astype(np.int64)
            totals = np.concatenate([np.zeros((1, k, 4), np.int64), np.cumsum(history, axis=0)])
            w = self.window
            before = totals[w : w + n] - totals[:n]
        chosen = best_member(objective_values(before, self.objective, self.alpha_p, self.c_p))
        all_scores = np.stack([r.scores for r in results], axis=1)
        scores = all_scores[np.arange(n), chosen]
        updated = np.any(np.stack([r.updated for r in results], axis=1), axis=1)
        self._record_many(steps)
        return StreamResult(scores, updated)

    def _record_many(self, steps: np.ndarray) -> None:
        """What ``_record`` does for each row of ``steps``, in one go (same resulting state)."""
        self._leader = None
        n = steps.shape[0]
        start = int(self._cursor[0])
        self._counts += steps.sum(axis=0, dtype=np.int64)
        tail = steps[max(0, n - self.window) :]
        slots = (start + np.arange(n - tail.shape[0], n)) % self.window
        self._recent[slots] = tail
        self._window_counts = self._recent.sum(axis=0, dtype=np.int64)
        self._cursor[0] = (start + n) % self.window
        self._cursor[1] += n

    @property
    def rho(self) -> float:
        return self.members[0].rho

    @property
    def rho_estimate(self) -> float:
        return self.members[0].rho_estimate

    @property
    def params(self) -> dict[str, Any]:
        auto = {"eta": "auto", "eta_grid": list(self.grid)}
        if self.losses is not None:
            auto["loss"] = "auto"
        if self.families:
            auto["members"] = "all"
        return {**self.members[0].params, **auto}

    def weights(self) -> np.ndarray:
        return self.members[self.leader()].weights()

    def migrate(self, migration: FeatureMigration) -> EtaGrid:
        """Every member carried onto the new schema; the track records and the leader carry on."""
        grid: EtaGrid = migrate(self, migration)
        return grid

    def state_nbytes(self) -> int:
        return sum(m.state_nbytes() for m in self.members) + self._recent.nbytes

    def to_state(self, copy: bool = True) -> dict[str, Any]:
        """Every member's state (``members``, by index) and the selection's counts; copies, or
        unguarded read-only views with ``copy=False`` (see :meth:`Learner.to_state`)."""
        return self._state_dict(
            np.copy if copy else read_only, {str(k): m.to_state(copy) for k, m in enumerate(self.members)}
        )

    @contextlib.contextmanager
    def borrowed_state(self) -> Iterator[dict[str, Any]]:
        """:meth:`to_state` as read-only views, every member borrowed too: while the block
        lasts, ``learn``, ``run`` and ``load_state`` raise :class:`StateBorrowed`."""
        with contextlib.ExitStack() as stack:
            members = {str(k): stack.enter_context(m.borrowed_state()) for k, m in enumerate(self.members)}
            self._borrows += 1
            try:
                yield self._state_dict(read_only, members)
            finally:
                self._borrows -= 1

    def _state_dict(
        self, share: Callable[[np.ndarray], np.ndarray], members: dict[str, Any]
    ) -> dict[str, Any]:
        extra = {"families": [family_name(f) for f in self.families]} if self.families else {}
        return {
            **extra,
            "format": STATE_FORMAT,
            "algorithm": self.algorithm,
            "n_features": self.n_features,
            "grid": share(np.array(self.grid)),
            "losses": list(self.losses or []),
            "member_counts": share(self._counts),
            "recent": share(self._recent),
            "cursor": share(self._cursor),
            "members": members,
        }

    def _refuse_if_borrowed(self) -> None:
        if self._borrows:
            raise StateBorrowed(f"the state of this {self.algorithm} ensemble is borrowed (borrowed_state)")

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Replace every member's state and the selection's counts; everything is checked
        (``format``, algorithm, dimension, grid, losses, members, array shapes) before anything
        changes."""
        self._refuse_if_borrowed()
        if state.get("format") != STATE_FORMAT:
            raise InvalidInput("state", f"format is {state.get('format')!r}, expected {STATE_FORMAT!r}")
        if state.get("algorithm") != self.algorithm or state.get("n_features") != self.n_features:
            raise InvalidInput("state", f"is for {state.get('algorithm')!r}, expected {self.algorithm!r}")
        if not np.array_equal(np.asarray(state.get("grid")), np.array(self.grid)):
            raise InvalidInput("state", "was written with another eta grid")
        if list(state.get("losses", [])) != list(self.losses or []):
            raise InvalidInput("state", "was written with other losses")
        if list(state.get("families", [])) != [family_name(f) for f in self.families]:
            raise InvalidInput("state", "was written with other member families")
        members = state.get("members", {})
        if sorted(members) != sorted(str(k) for k in range(len(self.members))):
            raise InvalidInput("state", "has the wrong members")
        checks: dict[str, np.ndarray] = {
            "member_counts": self._counts,
            "recent": self._recent,
            "cursor": self._cursor,
        }
        arrays = {}
        for key, current in checks.items():
            arr = np.asarray(state.get(key))
            if arr.dtype != current.dtype or arr.shape != current.shape:
                raise InvalidInput(
                    "state", f"{key!r} has {arr.dtype}{arr.shape}, expected {current.dtype}{current.shape}"
                )
            arrays[key] = np.array(arr, copy=True, order="C")
        known = {"format", "algorithm", "n_features", "grid", "losses", "members", "families"}
        extra = set(state) - set(checks) - known
        if extra:
            raise InvalidInput("state", f"unexpected entries {sorted(extra)}")
        clones = [type(m)(m.n_features, **m.params) for m in self.members]
        for clone, k in zip(clones, range(len(clones)), strict=True):
            clone.load_state(members[str(k)])  # validates before anything is replaced
        self.members = clones
        self._counts, self._recent, self._cursor = arrays["member_counts"], arrays["recent"], arrays["cursor"]
        self._window_counts = self._recent.sum(axis=0, dtype=np.int64)
        self._leader = None
