"""What the engine reports as it works. These no-ops are the default; the telemetry
(:class:`service.telemetry.Telemetry`) overrides them. Every ``model`` passed here is the name of
a model that exists on this replica, so a metric label built from it stays bounded."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .runtime import Applied


class Observer:
    def model_added(self, model: str) -> None:
        """A model started serving on this replica."""

    def model_removed(self, model: str) -> None:
        """A model was deleted, or this replica stopped serving it."""

    def predictions(self, model: str, anomalies: int, normals: int) -> None:
        """Predictions were answered."""

    def predictions_refused(self, model: str, reason: str, count: int = 1) -> None:
        """Predictions were refused (invalid features, limits)."""

    def features_ignored(self, model: str, at: str, count: int) -> None:
        """``count`` feature names a model could not take (``at``: ``predict`` or ``label``)."""

    def applied(self, model: str, applied: Applied, lag: float) -> None:
        """A logged label was learned, ``lag`` seconds after it was acknowledged (by any replica)."""

    def rejected(self, model: str, reason: str, count: int = 1) -> None:
        """Labels were not applied (duplicate, conflict, unknown, expired, gone, invalid_label, or
        invalid_features of a labelled example never scored)."""

    def expired(self, model: str, count: int) -> None:
        """Pending predictions expired unlabelled."""

    def resynced(self, model: str) -> None:
        """This replica found a gap in the log and reloaded a checkpoint to carry on."""

    def checkpointed(self, model: str, seconds: float, nbytes: int) -> None:
        """This replica wrote a checkpoint of ``nbytes`` in ``seconds``."""
