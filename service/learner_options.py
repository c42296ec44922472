"""The options objects of the learners that take their own hyper-parameters, as a model's
configuration carries them (``opid``, ``forest``, ``knn`` in ``PUT /models/{name}``); see
:class:`service.model_config.ModelConfig`, which passes them to the learner it builds."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class OPIDOptions(BaseModel):
    """OPID's hyper-parameters (``algorithm: "opid"``; see :mod:`service.learners.opid`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lam: PositiveFloat = Field(1.0, description="weight of the consistency term of the C-stage (λ)")
    ridge: PositiveFloat = Field(1.0, description="ridge of the least squares (the paper's ρ)")
    gamma: Literal["cv"] | PositiveFloat = Field(
        "cv", description='E-stage regulariser γ, or "cv": 5-fold cross-validation at every refit'
    )
    refit_every: int = Field(60, ge=1, le=100_000, description="labels between E-stage refits")
    rho_tolerance: PositiveFloat = Field(
        0.05, description="relative move of rho that rebuilds the C-stage inverse"
    )


class ForestOptions(BaseModel):
    """The forest's hyper-parameters (``algorithm: "amf"``; see :mod:`service.learners.forest`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_estimators: int = Field(10, ge=1, le=100, description="trees")
    step: PositiveFloat = Field(1.0, description="learning rate of the aggregation's exponential weights")
    dirichlet: PositiveFloat = Field(0.5, description="prior of the leaf predictor (0.5: Jeffreys)")
    use_aggregation: bool = Field(True, description="aggregate over the prunings of each tree")
    split_pure: bool = Field(False, description="split nodes whose labels all equal the new one")
    max_nodes: int = Field(
        4096, ge=3, le=2**24, description="node budget per tree; a full tree stops splitting"
    )
    seed: int = Field(0, ge=0, lt=2**63, description="seed of the trees' random streams")


class KNNOptions(BaseModel):
    """The nearest neighbours' hyper-parameters (``algorithm: "knn"``; see :mod:`service.learners.knn`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int = Field(5, ge=1, le=1000, description="neighbours that vote")
    window: int = Field(
        1000, ge=1, le=1_000_000, description="labelled examples kept (the last ones): window x d floats"
    )
    weighting: Literal["uniform", "distance"] = Field(
        "distance", description="each neighbour's vote: 1 / its distance, or 1"
    )
    dirichlet: PositiveFloat = Field(0.5, description="prior smoothing the vote (0.5: Jeffreys)")
