"""A read-only view of one model, for the API and the telemetry.

A view is taken when asked for (a request, a scrape) and holds plain values: nothing read
through it can change a model, and the API and telemetry never reach into a replica's parts.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model_config import ModelConfig
    from .replica import ModelReplica


@dataclass(frozen=True, slots=True)
class FailedModel:
    """A model whose stored configuration this process cannot load."""

    name: str
    generation: int
    reason: str


@dataclass(frozen=True, slots=True)
class MeasuresView:
    """The running (or windowed) measures: counts and the values derived from them."""

    t_p: int
    t_n: int
    m_p: int
    m_n: int
    weighted_sum: float
    weighted_cost: float
    sensitivity: float
    specificity: float


@dataclass(frozen=True, slots=True)
class ChallengerView:
    """A challenger's prequential measures and this process's shadow agreement with the model."""

    name: str
    labels: int
    weighted_sum: float
    weighted_cost: float
    agreement: float
    """Share of the predictions scored in shadow here whose label matched the model's (NaN: none)."""


@dataclass(frozen=True, slots=True)
class ModelView:
    name: str
    generation: int
    status: str
    """``serving``, ``recovering``, ``failed`` or ``stopped``."""
    failure: str | None
    config: ModelConfig | None
    created_at: float
    version: int = 0
    updates: int = 0
    pending_predictions: int | None = None
    measures: MeasuresView | None = None
    window: MeasuresView | None = None
    window_size: int = 0
    rho: float = math.nan
    rho_estimate: float = math.nan
    eta: float = math.nan
    checkpoint_version: int = 0
    checkpoint_age_seconds: float = math.nan
    checkpoint_writer: bool = False
    resyncs: int = 0
    features_registered: int = 0
    """Feature names registered (named schemas), else ``n_features``."""
    drift_detections: int = 0
    """Drifts the model's detector signalled (:mod:`service.drift`), a function of its log."""
    challengers: tuple[ChallengerView, ...] = ()
    state: dict[str, Any] = field(default_factory=dict)
    """What the learner and the runtime describe (``GET /models/{name}``'s ``state``)."""

    @classmethod
    def of(cls, replica: ModelReplica, detail: bool = False) -> ModelView:
        """A view of ``replica``; with ``detail``, ``state`` holds what the runtime describes."""
        rt = replica.runtime
        since = rt.checkpointed_at if rt.checkpointed_at is not None else rt.created_at
        m, w = rt.measures, rt.window
        return cls(
            name=replica.name,
            generation=replica.generation,
            status=replica.status.value,
            failure=replica.failure,
            config=replica.config,
            created_at=rt.created_at,
            version=rt.version,
            updates=rt.updates,
            pending_predictions=replica.pending_count,
            measures=MeasuresView(
                m.counts.t_p,
                m.counts.t_n,
                m.counts.m_p,
                m.counts.m_n,
                m.weighted_sum,
                m.weighted_cost,
                m.sensitivity,
                m.specificity,
            ),
            window=MeasuresView(
                w.counts.t_p,
                w.counts.t_n,
                w.counts.m_p,
                w.counts.m_n,
                w.weighted_sum,
                w.weighted_cost,
                w.sensitivity,
                w.specificity,
            ),
            window_size=w.size,
            rho=rt.learner.rho,
            rho_estimate=m.rho_estimate,
            eta=rt.eta,
            checkpoint_version=rt.checkpointed_version,
            checkpoint_age_seconds=max(0.0, time.time() - since),
            checkpoint_writer=replica.is_writer,
            resyncs=replica.resyncs,
            features_registered=(
                len(rt.features.registry.names) if rt.features.registry is not None else rt.features.dimension
            ),
            drift_detections=rt.drift.detections,
            challengers=tuple(
                ChallengerView(
                    name,
                    c.measures.labels,
                    c.measures.weighted_sum,
                    c.measures.weighted_cost,
                    c.shadow_agreements / c.shadow_predictions if c.shadow_predictions else math.nan,
                )
                for name, c in sorted(rt.challengers.items())
            ),
            state=rt.describe() if detail else {},
        )

    @classmethod
    def of_failed(cls, failed: FailedModel) -> ModelView:
        return cls(
            name=failed.name,
            generation=failed.generation,
            status="failed",
            failure=failed.reason,
            config=None,
            created_at=0.0,
        )
