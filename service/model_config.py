"""A model's configuration, as clients send it to ``PUT /models/{name}``, and the learner it builds.

Defaults are what a user gets without tuning (see the README's "Defaults" section):
objective ``sum`` with the online Laplace rho, ``loss="auto"`` (both losses), ``eta="auto"`` (online selection
over a grid), an intercept, L2 normalisation, and full ACOG when its covariance fits the
memory budget, SSACOG otherwise. ``feature_map`` runs ACOG (full or diagonal) over a nonlinear
map of the features; ``auto_members="all"`` adds nonlinear members to the ``eta="auto"`` ensemble
for small ``d``.

The feature schema is either ``n_features`` (dense lists and sparse index/value input) or
named: ``feature_names`` (a closed schema: other names are refused) and/or
``max_features`` (an open schema: new names are registered, in label-log order, up to
that many).

Some algorithms have defaults of their own for shared fields (:data:`ALGORITHM_DEFAULTS`): they
apply when the client leaves the field out, and the stored configuration shows them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from .learner_options import ForestOptions, KNNOptions, OPIDOptions
from .learners import ALGORITHMS, DEFAULT_GRID, NONLINEAR_MAX_FEATURES, OnlineLearner, create
from .learners.covariance import DEFAULT_MEMORY_BUDGET
from .learners.nonlinear import MAP_LEARNERS, MAX_COMPONENTS, mapped_dimension
from .learners.roster import (
    FOREST_MAX_FEATURES,
    NEIGHBOURS_MAX_FEATURES,
    STANDARD_MAX_FEATURES,
    families_for,
    forests_for,
    forms_for,
)
from .measures import complement

if TYPE_CHECKING:
    Algorithm = str
else:
    Algorithm = Literal[tuple(ALGORITHMS)]
    """The registry's names (:data:`service.learners.ALGORITHMS`), in its order: the OpenAPI enum and
    the validation follow the registry, so registering a learner is all it takes to offer it."""
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Probability = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
FeatureName = Annotated[str, Field(min_length=1, max_length=256)]
"""A named feature, in ``feature_names`` and as a key of named input."""
BATCHED_TUNABLES = ("lda_weight", "lam", "sketch_fraction", "batch_size", "eq17", "sketch_rows")

ALGORITHM_DEFAULTS: dict[str, dict[str, Any]] = {
    # OLI2DS (docs/learners.md §9): the code's C, and no L2 scaling, which over a changing
    # present set would rescale the features that stay. The intercept stays (unlike the code): without
    # it the cost cannot move the threshold on centred data (python -m bench.incomplete_streams).
    "oli2ds": {"C": 0.01, "normalize": "none"},
    # SDROGD and Pegasos in the service step on every label (``batch_size`` 1: the paper's mini-batch
    # of 60 left a model at w = 0 for its first 60 labels, 3 steps in 200), and Pegasos with
    # lam = 0.1 (lam = 1 bounds ||w|| by 1 and its step 1/(lam t) averages the hinge gradients into
    # a class-centroid rule). Over the first 200 labels of australian (seed 0): weighted sum
    # 0.605 -> 0.831 (sdrogd), 0.582 -> 0.796 (pegasos); the other algorithms 0.75-0.85. The
    # paper's protocol passes its own batch_size and lam.
    "pegasos": {"lam": 0.1},
}
"""Defaults that differ by algorithm, for fields the client did not give."""
OLI2DS_FIELDS = ("theta", "statistics", "cost_in", "zero_is_missing", "sparsity", "lambda_s", "B")


class FeatureMapOptions(BaseModel):
    """A feature map ``z = phi(x)`` under ACOG (``algorithm`` acog or acog-diag is the learner over
    ``z``; see :mod:`service.learners.feature_maps`). The map's arrays derive from ``seed`` and the
    labels, so replicas and recovery rebuild the same bits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["none", "quadratic", "rff", "nystrom"] = Field(
        ...,
        description="quadratic: x and its pairwise products (d <= 64, D = d + d(d+1)/2); rff: random "
        "Fourier features of a Gaussian kernel (D = n_components); nystrom: Nystrom features over "
        "budget kept examples (D = budget)",
    )
    n_components: int = Field(200, ge=1, le=MAX_COMPONENTS, description="rff: D, the random features")
    budget: int = Field(100, ge=1, le=MAX_COMPONENTS, description="nystrom: B, the kept examples")
    bandwidth: PositiveFloat = Field(1.0, description="rff, nystrom: sigma of the Gaussian kernel")
    seed: int = Field(0, ge=0, lt=2**63, description="rff: seed of the random features")

    @model_validator(mode="after")
    def _settings_of_the_kind(self) -> FeatureMapOptions:
        takes = MAP_SETTINGS[self.kind]
        fields = type(self).model_fields
        # a stored configuration holds every field at its default: only a setting moved off its
        # default is one the client meant for this kind
        stray = sorted(
            n for n in fields if n != "kind" and n not in takes and getattr(self, n) != fields[n].default
        )
        if stray:
            raise ValueError(f"feature_map.{stray[0]} does not apply to kind {self.kind!r}")
        return self

    @property
    def learner(self) -> str | None:
        """The registered learner that holds the map (None for ``kind="none"``)."""
        return MAP_LEARNERS.get(self.kind)

    def learner_params(self) -> dict[str, Any]:
        """The map's parameters of :func:`service.learners.create` for :attr:`learner`."""
        return {name: getattr(self, name) for name in sorted(MAP_SETTINGS[self.kind])}

    def dimension(self, n_features: int) -> int:
        """``D``, the mapped coordinates (without the intercept)."""
        if self.learner is None:
            return n_features
        return mapped_dimension(self.learner, n_features, self.learner_params())


MAP_SETTINGS: dict[str, set[str]] = {
    "none": set(),
    "quadratic": set(),
    "rff": {"n_components", "bandwidth", "seed"},
    "nystrom": {"budget", "bandwidth"},
}
MAP_UPDATES = ("acog", "acog-diag")
"""The algorithms a feature map runs under (the ``update`` of the map's learner)."""


class ModelConfig(BaseModel):
    """Everything that defines a model but its learned state."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    algorithm: Algorithm | None = Field(
        None, description="learner; default: acog when its covariance fits the memory budget, else ssacog"
    )
    loss: Literal["I", "II", "auto"] = Field(
        "auto", description='"I" (uneven margin), "II" (uneven slope), or "auto": members for both'
    )
    objective: Literal["sum", "cost"] = Field(
        "sum", description="sum: alpha_p sens + alpha_n spec; cost: c_p M_p + c_n M_n"
    )
    alpha_p: Probability = 0.5
    c_p: Probability = 0.9
    rho: Literal["auto"] | PositiveFloat = Field(
        "auto", description='"auto": the Laplace estimate for sum, c_p/c_n for cost; or a fixed number'
    )
    eta: Literal["auto"] | PositiveFloat = Field(
        "auto", description='learning rate, or "auto": online selection over eta_grid'
    )
    eta_grid: list[PositiveFloat] = Field(
        default_factory=lambda: list(DEFAULT_GRID), min_length=1, max_length=12
    )
    selection: Literal["hedge", "leader", "window"] = Field(
        "hedge",
        description='eta="auto": how the members make one prediction. hedge: a Fixed-Share vote weighted by '
        "each member's class-balanced (sum) or cost-weighted (cost) mistakes, from a prior with equal "
        "mass per family and input form; leader: the member with "
        "the best objective so far; window: the same over the last selection_window labels",
    )
    selection_window: int = Field(1000, ge=1, le=100_000)
    gamma: PositiveFloat = 1.0
    sketch_size: int = Field(5, ge=1, le=64)
    C: PositiveFloat = 1.0
    r: PositiveFloat = 1.0
    normalize: Literal["auto", "l2", "none"] = Field(
        "auto",
        description='auto: the eta="auto" ensemble normalises for its members (per-example L2, and online '
        f"per-feature standardisation for d <= {STANDARD_MAX_FEATURES}), any other learner reads x "
        "scaled to unit L2 norm; l2: every example scaled to unit L2 norm; none: as sent",
    )
    fit_intercept: bool = True
    intercept_value: Annotated[float, Field(allow_inf_nan=False)] = 1.0
    theta: PositiveFloat = Field(8.0, description="oli2ds: scale of every step (the code's theta)")
    statistics: Literal["reference", "welford"] = Field(
        "reference", description="oli2ds: informativeness h by the code's rule, or the population variance"
    )
    cost_in: Literal["scale", "cap"] = Field(
        "scale", description="oli2ds: the cost scales the step (the code) or caps it (the KKT form)"
    )
    zero_is_missing: bool = Field(False, description="oli2ds: read an explicit 0 as an absent feature")
    sparsity: bool = Field(False, description="oli2ds: the L1-ball projection and truncation step")
    lambda_s: PositiveFloat = Field(30.0, description="oli2ds: radius of the sparsity projection")
    B: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(
        1.0, description="oli2ds: share of the features seen that the sparsity step keeps"
    )
    label_format: Literal["plus_minus_one", "zero_one"] = Field(
        "plus_minus_one", description="labels accepted by /feedback: -1/+1, or 0/1 (1 = anomaly)"
    )
    opid: OPIDOptions | None = Field(None, description='options of algorithm "opid"')
    forest: ForestOptions | None = Field(None, description='options of algorithm "amf"')
    knn: KNNOptions | None = Field(None, description='options of algorithm "knn"')
    feature_map: FeatureMapOptions | None = Field(
        None,
        description="a nonlinear feature map under acog or acog-diag (default acog when the "
        "members' covariances over the mapped dimension fit the memory budget, else acog-diag)",
    )
    auto_members: Literal["linear", "all", "auto"] = Field(
        "auto",
        description='eta="auto": "linear": ACOG members only; "all" adds ACOG-diag over the quadratic '
        f"features (one member per eta and loss) when the dimension is <= {NONLINEAR_MAX_FEATURES}; "
        f'"auto" adds the forest too when the dimension is <= {FOREST_MAX_FEATURES}, and the k nearest '
        f"neighbours over the standardised input when it is <= {NEIGHBOURS_MAX_FEATURES}",
    )
    # --- SDROGD and Pegasos (docs/learners.md §8); eta is a learning rate, so the paper's eta
    # is lda_weight here. Both step with 1/t (Pegasos 1/(lam t)): eta does not apply to them. ---
    lda_weight: float = Field(
        0.3, ge=0, le=1, allow_inf_nan=False, description="sdrogd: weight of the within-class scatter"
    )
    lam: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, description="sdrogd, pegasos: the L2 weight lambda (default 0 for sdrogd, 0.1 for pegasos)"
    )
    sketch_fraction: float = Field(
        0.1, gt=0, le=1, allow_inf_nan=False, description="sdrogd: sketch of l = ceil(f d) directions"
    )
    batch_size: int = Field(1, ge=1, le=100_000, description="sdrogd, pegasos: labels per step (paper: 60)")
    eq17: Literal["expanded", "printed"] = "expanded"
    sketch_rows: Literal["all", "upper"] = "all"
    # --- end of SDROGD and Pegasos ---
    n_features: int | None = Field(None, ge=1)
    feature_names: list[FeatureName] | None = Field(None, min_length=1)
    max_features: int | None = Field(None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _algorithm_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("algorithm"), str):
            defaults = ALGORITHM_DEFAULTS.get(data["algorithm"], {})
            data = {**{k: v for k, v in defaults.items() if k not in data}, **data}
        return data

    @field_validator("eta_grid")
    @classmethod
    def _distinct(cls, grid: list[float]) -> list[float]:
        if len(set(grid)) != len(grid):
            raise ValueError("eta_grid values must be distinct")
        return grid

    @model_validator(mode="after")
    def _one_schema(self) -> ModelConfig:
        named = self.feature_names is not None or self.max_features is not None
        if self.n_features is not None and named:
            raise ValueError("give either n_features or feature_names/max_features, not both")
        if self.n_features is None and not named:
            raise ValueError("a feature schema is required: n_features, or feature_names and/or max_features")
        if self.feature_names is not None:
            if len(set(self.feature_names)) != len(self.feature_names):
                raise ValueError("feature_names must be distinct")
            if self.max_features is not None and self.max_features < len(self.feature_names):
                raise ValueError("max_features must be at least len(feature_names)")
        return self

    @field_validator("feature_map")
    @classmethod
    def _map_under_acog(
        cls, value: FeatureMapOptions | None, info: ValidationInfo
    ) -> FeatureMapOptions | None:
        algorithm = info.data.get("algorithm")
        if value is not None and value.learner is not None and algorithm not in (None, *MAP_UPDATES):
            raise ValueError(
                f"runs under {' or '.join(MAP_UPDATES)} (the learner over the mapped features), "
                f"not {algorithm}"
            )
        return value

    @field_validator("auto_members")
    @classmethod
    def _members_or_map(cls, value: str, info: ValidationInfo) -> str:
        """Runs when ``auto_members`` is given (pydantic does not validate a default)."""
        mapping = info.data.get("feature_map")
        if value != "linear" and mapping is not None and mapping.learner is not None:
            raise ValueError(f'"{value}" and a feature_map do not go together: choose one')
        return value

    @property
    def dimension(self) -> int:
        """Length of the learner's input (without the intercept)."""
        if self.n_features is not None:
            return self.n_features
        if self.max_features is not None:
            return self.max_features
        assert self.feature_names is not None
        return len(self.feature_names)

    @property
    def named(self) -> bool:
        return self.n_features is None

    @property
    def open_schema(self) -> bool:
        return self.max_features is not None

    @property
    def members(self) -> int:
        """How many learners the model runs: one per eta of the grid (``eta="auto"``) and per
        loss (``loss="auto"``)."""
        return (len(self.eta_grid) if self.eta == "auto" else 1) * (2 if self.loss == "auto" else 1)

    @property
    def ensemble(self) -> bool:
        """Whether the learner is the ``eta="auto"`` (or ``loss="auto"``) ensemble."""
        spec = ALGORITHMS[self.learner_name()].param_spec()
        return "eta" in spec and "auto" in (self.eta, self.loss if "loss" in spec else None)

    def member_algorithms(self) -> list[str]:
        """The registered learners the ensemble's families add (the quadratic map, the forest), for
        the warm-up (:func:`service.learners.warm_up`)."""
        if not self.ensemble or self.eta != "auto" or self.mapped:
            return []
        names = [cls.algorithm for cls, _ in families_for(self.auto_members, self.dimension)]
        forests = forests_for(self.auto_members, self.dimension, self.learner_params(), 2)
        return names + [cls.algorithm for cls, _ in forests]

    @property
    def request_normalize(self) -> Literal["l2", "none"]:
        """What the service applies to a request's vector: ``normalize``, with ``"auto"`` meaning
        ``"none"`` for the ensemble (it normalises for its members) and ``"l2"`` otherwise."""
        if self.normalize == "auto":
            return "none" if self.ensemble and not self.mapped else "l2"
        return self.normalize

    @property
    def mapped(self) -> bool:
        """Whether a feature map (other than ``kind="none"``) is configured."""
        return self.feature_map is not None and self.feature_map.learner is not None

    def resolved_algorithm(self, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> str:
        """The algorithm in use: as given, or acog when ``K`` covariances fit, else ssacog (under a
        feature map: acog when ``K`` covariances over the mapped dimension fit, else acog-diag)."""
        if self.algorithm is not None:
            return self.algorithm
        copies = self.members
        if self.normalize == "auto" and not self.mapped and "auto" in (self.eta, self.loss):
            copies *= len(forms_for("auto", self.dimension))  # the members run once per input form
        if self.feature_map is not None and self.mapped:
            dim = self.feature_map.dimension(self.dimension) + (1 if self.fit_intercept else 0)
            return "acog" if copies * dim * dim * 8 <= memory_budget else "acog-diag"
        dim = self.dimension + (1 if self.fit_intercept else 0)
        return "acog" if copies * dim * dim * 8 <= memory_budget else "ssacog"

    def learner_name(self, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> str:
        """The registered learner :meth:`build_learner` makes: the algorithm, or under a feature map
        the map's learner (``quadratic``, ``fogd``, ``nogd``) with the algorithm as its ``update``."""
        if self.feature_map is not None and self.feature_map.learner is not None:
            return self.feature_map.learner
        return self.resolved_algorithm(memory_budget)

    def inapplicable(self, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> list[str]:
        """Fields the client set explicitly that the algorithm does not take (``eta`` for the
        perceptron, say): refused when a model is created, so that nothing is silently ignored."""
        spec = ALGORITHMS[self.learner_name(memory_budget)].param_spec()
        tunables = {
            "loss",
            "gamma",
            "sketch_size",
            "C",
            "r",
            "eta",
            "eta_grid",
            "selection",
            "selection_window",
            *OLI2DS_FIELDS,
            *BATCHED_TUNABLES,
        }
        refused = sorted(name for name in self.model_fields_set & tunables if name not in spec)
        opid = self.resolved_algorithm(memory_budget) == "opid"
        if opid and "gamma" in self.model_fields_set:
            refused.append("gamma")  # OPID's gamma is opid.gamma
        if not opid and self.opid is not None:
            refused.append("opid")
        if self.forest is not None and self.resolved_algorithm(memory_budget) != "amf":
            refused.append("forest")
        if self.knn is not None and self.resolved_algorithm(memory_budget) != "knn":
            refused.append("knn")
        if "eta" in spec and self.eta != "auto":
            refused += [
                n
                for n in ("eta_grid", "selection", "selection_window", "auto_members")
                if n in self.model_fields_set
            ]
        if "eta" not in spec and "auto_members" in self.model_fields_set:
            refused.append("auto_members")
        return refused

    def pinned(self, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> ModelConfig:
        """This configuration with the algorithm resolved, as stored with a generation: a later
        change of the memory budget must not change the learner of an existing model."""
        algorithm = self.resolved_algorithm(memory_budget)
        update: dict[str, Any] = {"algorithm": algorithm}
        if self.mapped:  # a map is one learner: no members to add
            update["auto_members"] = "linear"
        if self._sketch_size() != self.sketch_size:  # the default capped at a small dimension
            update["sketch_size"] = self._sketch_size()
        if "loss" in self._batched_params(algorithm):  # sdrogd, pegasos: the default loss is II
            update["loss"] = self._batched_params(algorithm)["loss"]
        return self.model_copy(update=update)

    def learner_params(self, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> dict[str, Any]:
        """Keyword arguments of :func:`service.learners.create`: only those the algorithm takes."""
        algorithm = self.resolved_algorithm(memory_budget)
        spec = ALGORITHMS[self.learner_name(memory_budget)].param_spec()
        wanted: dict[str, Any] = {
            "fit_intercept": self.fit_intercept,
            "intercept_value": self.intercept_value,
            "loss": self.loss,
            "gamma": self.gamma,
            "sketch_size": self._sketch_size(),
            "C": self.C,
            "r": self.r,
            "eta": self.eta,
            "alpha_p": self.alpha_p,
            "memory_budget": memory_budget,
            **{name: getattr(self, name) for name in OLI2DS_FIELDS},
            **self._batched_params(algorithm),
        }
        if self.rho == "auto":
            wanted["rho"] = "laplace" if self.objective == "sum" else self.c_p / complement(self.c_p)
        else:
            wanted["rho"] = float(self.rho)
        if algorithm == "opid":
            wanted.update((self.opid or OPIDOptions()).model_dump())
        if algorithm == "amf":
            wanted.update((self.forest or ForestOptions()).model_dump())
        if algorithm == "knn":
            wanted.update((self.knn or KNNOptions()).model_dump())
        if self.feature_map is not None and self.mapped:
            wanted.update(self.feature_map.learner_params(), update=algorithm)
        params = {k: v for k, v in wanted.items() if k in spec}
        if "eta" in spec and "auto" in (self.eta, wanted["loss"] if "loss" in spec else None):
            params.update(
                objective=self.objective,
                c_p=self.c_p,
                alpha_p=self.alpha_p,
                selection=self.selection,
                window=self.selection_window,
            )
            if self.eta == "auto":
                params["eta_grid"] = self.eta_grid
                if self.auto_members != "linear" and not self.mapped:
                    params["members"] = self.auto_members
            if self.request_normalize == "none" and self.normalize == "auto":
                params["inputs"] = list(forms_for("auto", self.dimension))
        return params

    def _sketch_size(self) -> int:
        """The sketch size: as the client set it (a sketch larger than the dimension is then refused
        by name), else the default capped at the dimension (intercept included), so that the default
        works for any ``d >= 1`` when the memory budget makes it sacog/ssacog."""
        if "sketch_size" in self.model_fields_set:
            return self.sketch_size
        return min(self.sketch_size, self.dimension + (1 if self.fit_intercept else 0))

    def _batched_params(self, algorithm: str) -> dict[str, Any]:
        """SDROGD's and Pegasos's options. Their default ``loss="auto"`` means loss II: there is no
        eta grid to span both losses (an explicit ``"auto"`` is refused by name)."""
        params: dict[str, Any] = {name: getattr(self, name) for name in BATCHED_TUNABLES if name != "lam"}
        if self.lam is not None:
            params["lam"] = self.lam
        if self.loss == "auto" and "loss" not in self.model_fields_set and algorithm in ("sdrogd", "pegasos"):
            params["loss"] = "II"
        return params

    def build_learner(self, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> OnlineLearner:
        """A fresh learner; raises ``ValueError`` naming the parameter when it cannot be built."""
        return create(self.learner_name(memory_budget), self.dimension, **self.learner_params(memory_budget))

    @property
    def rho_description(self) -> str:
        if self.rho != "auto":
            return f"fixed {self.rho}"
        if self.objective == "sum":
            return "laplace"
        return f"c_p/c_n = {self.c_p / complement(self.c_p):.6g}"
