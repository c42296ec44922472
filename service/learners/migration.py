"""A declared change of feature schema, carried through any learner "in the plainest honest way".

A :class:`FeatureMigration` says, for every feature of the new schema, which old feature it is
(a *survived* feature) or that it is new (*augmented*); old features no new one points to have
*vanished*. :func:`migrate` returns a learner on the new schema that keeps what the old one knew
about the survived features and nothing else:

- **weights**: survived weights kept, augmented weights 0, vanished ones dropped (the intercept,
  when there is one, is a survived feature);
- **second-order state** (ACOG, AROW: ``Sigma``; ACOG-diag: its diagonal): the learners keep a
  Gaussian belief ``N(mu, Sigma)`` over the weights, and forgetting the vanished weights is
  *marginalising* them out, which for a Gaussian is taking the sub-block ``Sigma[S, S]`` (not a
  sub-block of the precision). Augmented weights get the prior (``Sigma = I`` on them, 0 against
  the survivors), as a fresh model would;
- **sketches** (SACOG, SSACOG): ``Sigma = I - Vᵀ diag(k) V`` with orthonormal rows ``V`` and
  ``k = t lam / (1 + t lam)``. Its marginal on S is ``I - Bᵀ B`` with ``B = diag(√k) V[:, S]``;
  the thin SVD ``B = Q diag(s) Rᵀ`` writes it back in sketch form (rows ``Rᵀ``, ``k' = s²``, so
  ``lam' = s² / (t (1 - s²))``), exactly, in O(m² |S|). Rows the SVD leaves empty are filled with
  unit directions orthogonal to the others, with ``lam = 0`` (they change nothing until learned).
  SSACOG is re-materialised first (``V = F Z``, ``mu = w + Zᵀ b``), then stored as ``Z = V``,
  ``F = I``, ``K = Z Zᵀ``, ``b = 0``;
- **per-feature statistics** (OLI2DS: a feature's mean, informativeness, count and when it was
  last present) are kept for the survivors; a new feature has none yet, as when OLI2DS first sees
  it, and a vanished one is gone from the previous example's present set;
- **counts and clocks** (``t_p, t_n`` for the Laplace rho, the sketches' Oja step count ``t``,
  OLI2DS's class counts and stamps) continue: the labels were seen;
- **the eta="auto" ensemble**: every member migrates alike; the members' track records and the
  leader carry on (they describe predictions that were made).

A learner with its own notion of a schema change (OPID) migrates itself instead (``opid``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidParameter


@dataclass(frozen=True, eq=False)
class FeatureMigration:
    """``source[j]``: the old index of new feature ``j``, or ``-1`` when ``j`` is augmented."""

    n_old: int
    source: np.ndarray

    def __post_init__(self) -> None:
        src = np.asarray(self.source)
        if isinstance(self.n_old, bool) or not isinstance(self.n_old, int | np.integer) or self.n_old < 1:
            raise InvalidParameter("n_old", f"must be an integer >= 1, got {self.n_old!r}")
        if src.ndim != 1 or src.size < 1 or not np.issubdtype(src.dtype, np.integer):
            raise InvalidParameter("source", "must be a non-empty list of integers (old index or -1)")
        if ((src < -1) | (src >= self.n_old)).any():
            bad = int(src[(src < -1) | (src >= self.n_old)][0])
            raise InvalidParameter(
                "source", f"old index {bad} is outside [0, {self.n_old}) (or -1: augmented)"
            )
        kept = src[src >= 0]
        if np.unique(kept).size != kept.size:
            raise InvalidParameter("source", "an old feature appears more than once")
        object.__setattr__(self, "source", src.astype(np.int64))
        self.source.flags.writeable = False

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def from_names(cls, old: Sequence[str], new: Sequence[str]) -> FeatureMigration:
        """Old and new name lists: ``S = O ∩ N`` survives (matched by name), the rest of N is
        augmented, the rest of O vanishes."""
        position = {name: i for i, name in enumerate(old)}
        if len(position) != len(old):
            raise InvalidParameter("feature_names", "the old names repeat")
        if len(set(new)) != len(new):
            raise InvalidParameter("feature_names", "the new names repeat")
        return cls(len(old), np.array([position.get(name, -1) for name in new], dtype=np.int64))

    @classmethod
    def from_indices(cls, n_old: int, survived: Sequence[int], n_augmented: int) -> FeatureMigration:
        """The survived old indices, in the order they take in the new schema, then ``n_augmented``
        new features at the end."""
        if isinstance(n_augmented, bool) or not isinstance(n_augmented, int) or n_augmented < 0:
            raise InvalidParameter("n_augmented", f"must be an integer >= 0, got {n_augmented!r}")
        return cls(n_old, np.concatenate([np.asarray(survived, dtype=np.int64), np.full(n_augmented, -1)]))

    # --- what it says -----------------------------------------------------------------------

    @property
    def n_new(self) -> int:
        return int(self.source.size)

    @property
    def survived_new(self) -> np.ndarray:
        """New indices of the survived features."""
        return np.flatnonzero(self.source >= 0)

    @property
    def survived_old(self) -> np.ndarray:
        """Old indices of the survived features (in the order of :attr:`survived_new`)."""
        return self.source[self.source >= 0]

    @property
    def augmented_new(self) -> np.ndarray:
        return np.flatnonzero(self.source < 0)

    @property
    def vanished_old(self) -> np.ndarray:
        return np.setdiff1d(np.arange(self.n_old), self.survived_old)

    def over_dims(self, intercept: bool) -> np.ndarray:
        """``source`` over a learner's coordinates: with an intercept, the last new coordinate is
        the last old one."""
        return np.append(self.source, self.n_old) if intercept else self.source

    def to_json(self) -> dict[str, Any]:
        return {"n_old": self.n_old, "source": [int(v) for v in self.source]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FeatureMigration:
        return cls(int(data["n_old"]), np.asarray(data["source"], dtype=np.int64))


# --------------------------------------------------------------------------- array moves


def carry_vector(old: np.ndarray, src: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """``fill`` with ``new[j] = old[src[j]]`` wherever ``src[j] >= 0``."""
    new = np.array(fill, dtype=old.dtype, copy=True)
    kept = src >= 0
    new[kept] = old[src[kept]]
    return new


def carry_block(old: np.ndarray, src: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """``fill`` with ``new[i, j] = old[src[i], src[j]]`` wherever both are survivors (the marginal
    of a covariance on the survived coordinates)."""
    new = np.array(fill, dtype=old.dtype, copy=True)
    kept = np.flatnonzero(src >= 0)
    new[np.ix_(kept, kept)] = old[np.ix_(src[kept], src[kept])]
    return new


def carry_columns(old: np.ndarray, src: np.ndarray, n_new: int) -> np.ndarray:
    """``new[:, j] = old[:, src[j]]`` for survivors, 0 for augmented columns."""
    new = np.zeros((old.shape[0], n_new))
    kept = src >= 0
    new[:, kept] = old[:, src[kept]]
    return new


def marginal_sketch(
    V: np.ndarray, coef: np.ndarray, src: np.ndarray, n_new: int
) -> tuple[np.ndarray, np.ndarray]:
    """The sketch form ``(V', k')`` of the marginal of ``I - Vᵀ diag(k) V`` on the survived
    coordinates (see the module docstring): orthonormal rows ``V'`` and ``k'`` in [0, 1)."""
    m = V.shape[0]
    B = np.sqrt(coef)[:, None] * carry_columns(V, src, n_new)
    _, s, Rt = np.linalg.svd(B, full_matrices=False)
    rank = int(np.sum(s > 1e-12 * max(1.0, float(s[0]) if s.size else 1.0)))
    rows = [Rt[i] for i in range(rank)]
    for j in range(n_new):  # complete with unit directions orthogonal to the rows so far
        if len(rows) == m:
            break
        e = np.zeros(n_new)
        e[j] = 1.0
        for _ in range(2):
            for r in rows:
                e -= (r @ e) * r
        norm = float(np.linalg.norm(e))
        if norm > 1e-8:
            rows.append(e / norm)
    new_V = np.array(rows).reshape(len(rows), n_new)
    new_coef = np.zeros(new_V.shape[0])
    new_coef[:rank] = s[:rank] ** 2
    return new_V, new_coef


# --------------------------------------------------------------------------- per algorithm

State = dict[str, Any]
Migrator = Callable[[State, State, np.ndarray], State]
"""``(old state, fresh state on the new schema, source over coordinates) -> new state``."""


def _weights_only(old: State, fresh: State, src: np.ndarray) -> State:
    return {**fresh, "counts": old["counts"].copy(), "w": carry_vector(old["w"], src, fresh["w"])}


def _covariance(old: State, fresh: State, src: np.ndarray) -> State:
    new = _weights_only(old, fresh, src)
    new["sigma"] = carry_block(old["sigma"], src, fresh["sigma"])
    return new


def _diagonal(old: State, fresh: State, src: np.ndarray) -> State:
    new = _weights_only(old, fresh, src)
    new["sigma_diag"] = carry_vector(old["sigma_diag"], src, fresh["sigma_diag"])
    return new


def _romma(old: State, fresh: State, src: np.ndarray) -> State:
    w = carry_vector(old["w"] * old["scale_norm"][0], src, fresh["w"])
    return {**fresh, "counts": old["counts"].copy(), "w": w, "scale_norm": np.array([1.0, float(w @ w)])}


def _sketch_from(
    V: np.ndarray, lam: np.ndarray, t: float, src: np.ndarray, fresh_V: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Directions and ``lam`` of the marginal sketch (the fresh directions before any round)."""
    if t <= 0.0:
        return fresh_V.copy(), np.zeros_like(lam)
    coef = t * lam / (1.0 + t * lam)
    new_V, new_coef = marginal_sketch(V, coef, src, fresh_V.shape[1])
    new_coef = np.minimum(new_coef, coef.max())  # s² <= max k < 1; rounding must not reach 1
    return new_V, new_coef / (t * (1.0 - new_coef))


def _sacog(old: State, fresh: State, src: np.ndarray) -> State:
    t = float(old["t"][0])
    V, lam = _sketch_from(old["V"], old["lam"], t, src, fresh["V"])
    return {
        **fresh,
        "counts": old["counts"].copy(),
        "w": carry_vector(old["w"], src, fresh["w"]),
        "V": V,
        "lam": lam,
        "t": old["t"].copy(),
    }


def _ssacog(old: State, fresh: State, src: np.ndarray) -> State:
    t = float(old["clock"][0])
    Z = old["ZT"].T
    mu = old["w"] + old["ZT"] @ old["b"]
    V, lam = _sketch_from(old["F"] @ Z, old["lam"], t, src, fresh["ZT"].T)
    ZT = np.ascontiguousarray(V.T)
    return {
        **fresh,
        "counts": old["counts"].copy(),
        "w": carry_vector(mu, src, fresh["w"]),
        "ZT": ZT,
        "F": np.eye(V.shape[0]),
        "K": ZT.T @ ZT,
        "b": np.zeros(V.shape[0]),
        "lam": lam,
        "clock": np.array([old["clock"][0], 0], dtype=old["clock"].dtype),
    }


def _per_feature(*names: str) -> Migrator:
    """A migrator that carries the per-feature arrays ``names`` by coordinate (a new coordinate
    takes its fresh value) and every other array as it is."""

    def move(old: State, fresh: State, src: np.ndarray) -> State:
        new = dict(fresh)
        for key, value in fresh.items():
            if isinstance(value, np.ndarray):
                kept = np.array(old[key], copy=True)
                new[key] = carry_vector(old[key], src, value) if key in names else kept
        return new

    return move


MIGRATORS: dict[str, Migrator] = {
    "perceptron": _weights_only,
    "pa1": _weights_only,
    "paum": _weights_only,
    "cpapb": _weights_only,
    "cog": _weights_only,
    "romma": _romma,
    "arow": _covariance,
    "acog": _covariance,
    "acog-diag": _diagonal,
    "sacog": _sacog,
    "ssacog": _ssacog,
    "oli2ds": _per_feature("w", "mean", "h", "cnt", "last_seen"),
}
"""How each algorithm's state crosses a migration (every registered algorithm has one)."""


def migrate(learner: Any, migration: FeatureMigration) -> Any:
    """A new learner on ``migration``'s new schema (the old one is left as it was).

    Raises :class:`InvalidParameter` when the migration does not start from the learner's schema
    or the new schema does not fit the configuration (a sketch larger than the new dimension, a
    covariance over the memory budget).
    """
    if migration.n_old != learner.n_features:
        raise InvalidParameter(
            "migration", f"starts from {migration.n_old} features, the model has {learner.n_features}"
        )
    members = getattr(learner, "members", None)
    if members is not None:
        return _migrate_ensemble(learner, migration)
    own = getattr(learner, "migrate_schema", None)
    if own is not None:
        return own(migration)
    try:
        move = MIGRATORS[learner.algorithm]
    except KeyError:
        raise InvalidParameter("algorithm", f"{learner.algorithm} has no schema migration") from None
    fresh = type(learner)(migration.n_new, **learner.params)
    src = migration.over_dims(bool(learner.params.get("fit_intercept", False)))
    fresh.load_state(move(learner.to_state(), fresh.to_state(), src))
    return fresh


def _migrate_ensemble(grid: Any, migration: FeatureMigration) -> Any:
    import copy

    from .covariance import check_sigma_fits

    first = grid.members[0]
    if "memory_budget" in first.params:
        dim = migration.n_new + (1 if first.params.get("fit_intercept") else 0)
        check_sigma_fits(first.algorithm, dim, first.params["memory_budget"], copies=len(grid.members))
    members = [_migrate_member(m, migration) for m in grid.members]
    new = copy.copy(grid)
    new.members = members
    new.n_features = migration.n_new
    new._tally = grid._tally.copy()
    new._vote_state = grid._vote_state.copy()
    new.inputs = grid.inputs.migrated(migration.source)
    new._leader = None
    if hasattr(new, "_borrows"):
        new._borrows = 0
    return new


def _migrate_member(member: Any, migration: FeatureMigration) -> Any:
    """A member on the new schema; a member whose state is defined on its schema alone (a forest's
    boxes) starts afresh on the new one, the others carry on (the combiner's weights carry on)."""
    if getattr(member, "migrate_schema", None) is None and member.algorithm not in MIGRATORS:
        return type(member)(migration.n_new, **member.params)
    return migrate(member, migration)
