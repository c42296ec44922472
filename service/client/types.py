"""What the service answers, as typed values (pydantic models).

These mirror the reply schemas of :mod:`service.api.schemas` but are defined apart from them,
on purpose: the client must not import the server (FastAPI, the engine, numba), and it must
keep working against a server one version ahead or behind. So every model here ignores
fields it does not know, and values whose range the server may widen are typed loosely
(``label`` is any integer: -1/+1, or 0/1 for ``zero_one`` models). ``tests/client/
test_types.py`` checks that every field of the server's reply schemas has a counterpart here,
so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Reply(BaseModel):
    """Base of every reply: immutable, and tolerant of fields added by newer servers."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class Prediction(Reply):
    """One scored instance: ``label`` is ``sign(score)`` with ``sign(0) = +1`` (+1 = anomaly; 1/0
    for ``zero_one`` models), ``score`` is ``mu . x``, ``model_version`` the number of labels the
    model had learned when it scored. ``stored`` is false when the store was down: a label for
    this ``prediction_id`` will then not be found."""

    prediction_id: str
    label: int
    score: float
    model: str
    model_version: int
    stored: bool = True
    ignored_features: list[str] = Field(default_factory=list)
    """Feature names the model cannot take (its ``max_features`` slots are all taken)."""

    @property
    def anomaly(self) -> bool:
        """Whether the model flagged the instance (``score >= 0``)."""
        return self.score >= 0.0


class FeedbackResult(Reply):
    """What became of one label.

    ``applied``: appended to the model's label log and learned (for a retried label, newer
    servers report the first application's outcome, with ``duplicate`` true as well);
    ``duplicate``: this prediction id had been labelled before and counts once; ``updated``:
    the weights moved. In a batch, an item that could not be applied carries its own
    ``status`` (404 unknown or expired id, 410 replaced model, 409 conflicting label) and
    ``error``; the others are applied regardless.
    """

    prediction_id: str
    model: str | None = None
    applied: bool = False
    duplicate: bool = False
    updated: bool = False
    model_version: int | None = None
    delay_seconds: float | None = None
    status: int = 200
    error: str | None = None
    ignored_features: list[str] = Field(default_factory=list)
    """Feature names the model could not register (its ``max_features`` slots are all taken)."""

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None


class ModelSummary(Reply):
    """One entry of ``GET /models``."""

    name: str
    generation: int
    algorithm: str | None = None
    version: int | None = None
    status: str = "serving"


class ModelInfo(Reply):
    """``GET /models/{name}``: the configuration as stored (algorithm resolved), the generation,
    and the learned ``state``: ``version`` (labels applied), counts, running and windowed
    measures, rho and the eta selection."""

    name: str
    generation: int
    status: str
    failure: str | None = None
    config: dict[str, Any]
    rho_mode: str = ""
    created_at: float = 0.0
    pending_predictions: int | None = None
    state: dict[str, Any] | None = None

    @property
    def version(self) -> int:
        """Labels applied so far (0 for a failed model)."""
        return int((self.state or {}).get("version", 0))

    @property
    def measures(self) -> dict[str, Any]:
        """Running measures over every label: counts ``t_p, t_n, m_p, m_n``, ``sensitivity``,
        ``specificity``, ``weighted_sum``, ``weighted_cost``, ``accuracy``, ``rho_estimate``."""
        measures: dict[str, Any] = (self.state or {}).get("measures", {})
        return measures


class Checkpoint(Reply):
    written: bool
    version: int


class RetainedCheckpoint(Reply):
    """One of ``GET /models/{name}/checkpoints``: a state a rollback can restore."""

    generation: int
    version: int
    applied_id: str
    written_at: float | None = None


class Health(Reply):
    status: str
    detail: str | None = None
    auth: str | None = None
    models: int | None = None
    store_epoch: str | None = None
