"""A request's instances read for a model: features parsed and checked, and batch sizes bounded.

Shared by the predictor and the label router (labelled examples never scored are read the same
way); a refusal names the field and is counted as a refused prediction, or as a refused label.
"""

from __future__ import annotations

from typing import Any

from model_store import Example

from ..features import FeatureError
from ..learners.inputs import SparseVector, max_abs
from ..settings import Settings
from .errors import InvalidRequest, LimitExceeded, TooLarge
from .observer import Observer
from .replica import ModelReplica


class InstanceReader:
    """Reads instances for a model under the service's limits; see the module docstring."""

    def __init__(self, settings: Settings, observer: Observer) -> None:
        self.settings = settings
        self.observer = observer

    def read(
        self, replica: ModelReplica, features: Any, field: str, labelled: bool = False
    ) -> tuple[Example, SparseVector]:
        """One instance's example and vector, or the refusal naming the field (counted as a
        refused label for a ``labelled`` example, else as a refused prediction)."""
        runtime = replica.runtime
        try:
            example, vector = runtime.features.parse(features, field)
        except FeatureError as exc:
            self._refused(replica.name, labelled)
            raise InvalidRequest(exc.field, exc.problem) from None
        bound = self.settings.max_feature_value
        if not runtime.features.unit_rows and max_abs(example.values) > bound:
            self._refused(replica.name, labelled)
            raise LimitExceeded(
                field,
                f"has a value of absolute size over {bound:g} (max_feature_value), which a model "
                "that reads unnormalised values cannot learn from without overflow",
            )
        return example, vector

    def check_batch(self, field: str, size: int, what: str) -> None:
        """Refuse a batch of more than ``max_batch`` items (:class:`TooLarge`)."""
        if size > self.settings.max_batch:
            raise TooLarge(field, f"{size} {what}, over the limit of {self.settings.max_batch} (max_batch)")

    def _refused(self, model: str, labelled: bool) -> None:
        if labelled:
            self.observer.rejected(model, "invalid_features")
        else:
            self.observer.predictions_refused(model, "invalid_features")
