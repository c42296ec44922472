"""Request and response bodies of the HTTP and WebSocket API (pydantic)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Discriminator, Field, StrictFloat, StrictInt, Tag, model_validator

from model_store import MODEL_NAME_MAX_LENGTH, MODEL_NAME_REGEX

from ..model_config import FeatureName

FiniteFloat = Annotated[float, Field(strict=True, allow_inf_nan=False)]
"""A JSON number (an integer is taken as a float): never a string, a boolean, NaN or inf."""
ModelName = Annotated[str, Field(min_length=1, max_length=MODEL_NAME_MAX_LENGTH, pattern=MODEL_NAME_REGEX)]
"""A model name in a body (:data:`model_store.MODEL_NAME_REGEX`)."""
ModelNameInPath = Annotated[
    str, Path(min_length=1, max_length=MODEL_NAME_MAX_LENGTH, pattern=MODEL_NAME_REGEX)
]
"""A model name in a path (``/models/{name}``)."""
Label = Annotated[
    StrictInt | StrictFloat,
    Field(description="the integer -1 or +1, or 0 or 1 for models with label_format zero_one (not 1.0)"),
]


class SparseFeatures(BaseModel):
    """A sparse vector: 0-based ``indices``, strictly increasing (unsorted or repeated ones are
    refused), and the ``values`` at them."""

    model_config = ConfigDict(extra="forbid")
    indices: list[Annotated[StrictInt, Field(ge=0)]]
    values: list[FiniteFloat]


def features_kind(value: Any) -> str | None:
    """Which form a ``features`` payload takes, so that a bad one is reported against that
    form only: a list is dense; an object whose keys are exactly ``indices`` and ``values``,
    both lists, is sparse; any other object is named."""
    if isinstance(value, list | tuple):
        return "dense"
    if isinstance(value, SparseFeatures):
        return "sparse"
    if isinstance(value, dict):
        sparse = set(value) == {"indices", "values"} and all(isinstance(v, list) for v in value.values())
        return "sparse" if sparse else "named"
    return None


Features = Annotated[
    Annotated[list[FiniteFloat], Tag("dense")]
    | Annotated[SparseFeatures, Tag("sparse")]
    | Annotated[dict[FeatureName, FiniteFloat], Tag("named")],
    Discriminator(
        features_kind,
        custom_error_type="features_type",
        custom_error_message='must be a list of numbers, {"indices": [...], "values": [...]} '
        "or {name: value}",
    ),
    Field(
        description='a dense list of n_features numbers, {"indices": [...], "values": [...]}, '
        "or {name: value} for models with named features",
    ),
]


def features_payload(features: list[float] | SparseFeatures | dict[str, float]) -> Any:
    """What the engine's feature parser takes."""
    if isinstance(features, SparseFeatures):
        return {"indices": features.indices, "values": features.values}
    return features


class PredictRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: ModelName | None = Field(
        None,
        description="the model to ask; required unless the service has a default model (ACOG_DEFAULT_MODEL)",
    )
    features: Features | None = None
    instances: list[Features] | None = Field(None, min_length=1, description="a batch of feature payloads")

    @model_validator(mode="after")
    def _one_of(self) -> PredictRequest:
        if (self.features is None) == (self.instances is None):
            raise ValueError('give exactly one of "features" or "instances"')
        return self


class PredictionOut(BaseModel):
    prediction_id: str
    label: Literal[-1, 0, 1] = Field(
        description="+1 anomaly, -1 normal: sign(mu . x) with sign(0) = +1; 1 and 0 for models with "
        "label_format zero_one (the labels they take)"
    )
    score: float = Field(description="mu . x")
    model: str
    model_version: int
    stored: bool = Field(description="false when the store was down: a later label will not find this id")
    ignored_features: list[str] = Field(
        default_factory=list,
        description="feature names this model cannot take: its max_features slots are all taken, so "
        "they weigh nothing now and will not be learned",
    )


class PredictBatchOut(BaseModel):
    predictions: list[PredictionOut]


class FeedbackItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prediction_id: str | None = Field(None, max_length=200)
    features: Features | None = None
    label: Label

    @model_validator(mode="after")
    def _one_of(self) -> FeedbackItem:
        if (self.prediction_id is None) == (self.features is None):
            raise ValueError('give exactly one of "prediction_id" or "features"')
        return self


class FeedbackRequest(BaseModel):
    """``{prediction_id, label}``; ``{model, features, label}`` for an example never scored;
    or ``items``: a batch of either kind (examples need ``model``)."""

    model_config = ConfigDict(extra="forbid")
    prediction_id: str | None = Field(None, max_length=200)
    model: ModelName | None = None
    features: Features | None = None
    label: Label | None = None
    items: list[FeedbackItem] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _shape(self) -> FeedbackRequest:
        single = self.prediction_id is not None or self.features is not None
        if single == (self.items is not None):
            raise ValueError('give "prediction_id" (or "model" and "features") with "label", or "items"')
        if single:
            if self.label is None:
                raise ValueError('"label" is required')
            if self.prediction_id is not None and self.features is not None:
                raise ValueError('give either "prediction_id" or "features", not both')
            if self.features is not None and self.model is None:
                raise ValueError('"model" is required with "features"')
        elif self.items is not None and any(i.features is not None for i in self.items):
            if self.model is None:
                raise ValueError('"model" is required when items carry "features"')
            if any(i.prediction_id is not None for i in self.items):
                raise ValueError("a batch holds either prediction ids or features, not both")
        return self


class FeedbackOut(BaseModel):
    prediction_id: str
    model: str | None
    applied: bool = Field(
        description="the label is in the model's log and learned (by this request, or, for a retry, "
        "by the first one)"
    )
    duplicate: bool = Field(
        description="this prediction id was labelled before with the same value: counted once, and "
        "this reply repeats the first one's outcome"
    )
    updated: bool | None = Field(
        description="the learner's weights moved (null: a retry whose first outcome this replica "
        "no longer remembers)"
    )
    model_version: int | None = Field(
        description="the model version that includes this label (its position in the model's log)"
    )
    delay_seconds: float | None = Field(description="label time minus prediction time")
    status: int = Field(200, description="HTTP status this item would have alone")
    error: str | None = None
    ignored_features: list[str] = Field(
        default_factory=list,
        description="feature names of the example the model could not register (its max_features "
        "slots are all taken): the label was learned without them",
    )


class FeedbackBatchOut(BaseModel):
    results: list[FeedbackOut]


ModelStatus = Literal["serving", "recovering", "failed", "stopped"]


class ModelSummary(BaseModel):
    name: str
    generation: int
    algorithm: str | None
    version: int | None
    status: ModelStatus


class ModelList(BaseModel):
    models: list[ModelSummary]


class ModelInfo(BaseModel):
    name: str
    generation: int
    status: ModelStatus
    failure: str | None = None
    config: dict[str, Any]
    rho_mode: str
    created_at: float
    pending_predictions: int | None = None
    state: dict[str, Any] | None = Field(
        None, description="version, counts, measures (all-time and windowed), rho, eta selection"
    )


class CheckpointOut(BaseModel):
    written: bool
    version: int


class Health(BaseModel):
    status: str
    detail: str | None = None
    auth: Literal["open", "keys"] | None = None
    models: int | None = None
    store_epoch: str | None = Field(
        None,
        description="the store's identity: pin it with ACOG_STORE_EPOCH to refuse a store that lost its data",
    )
