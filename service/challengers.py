"""Challengers: other model configurations that learn, in shadow, from a model's labels.

A challenger is added, replaced and removed by entries of the model's label log
(``CHALLENGER_EVENT``), so every replica holds it from the same label on and applies to it the same
labels in the same order as the model (the champion): its state is a function of the log, like the
champion's, and it is part of the model's checkpoint. It starts afresh at the entry that added it,
and learns every later label right after the champion (test then train: its prediction before
learning the label is what its measures and drift detector count). It never answers a request:
each prediction of the champion is also scored by every challenger, and only the share of
agreement is kept (this process's, not state).

It shares the champion's feature space: the vector a label or request becomes (normalisation,
registered names) is the champion's, so a challenger's configuration must have the same feature
schema, normalisation and label format (``SHARED_FIELDS``); the algorithm and its parameters,
the objective and its costs, ``feature_map`` and ``auto_members`` may differ. A declared schema
change drops every challenger (their learners would need the same migration). At most
``Settings.max_challengers`` per model, a limit written into each adding entry so that the check
is the same on every replica.

Promoting a challenger makes its state (learner, measures, drift detector) the model's, as a new
generation (:mod:`service.engine.challenge`): the state it holds at the promoting entry, bit for bit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from model_store.ids import MODEL_NAME_MAX_LENGTH, MODEL_NAME_REGEX

from .drift import DriftMonitor
from .learners import OnlineLearner
from .learners.inputs import SparseVector
from .measures import Measures, Objective
from .model_config import ModelConfig
from .normalization import unit_l2

CHALLENGER_EVENT = "challenger"
"""The kind of the log entries that add (``put``), remove (``delete``) and promote challengers."""
SHARED_FIELDS = ("n_features", "feature_names", "max_features", "normalize", "label_format")
"""Configuration fields a challenger must share with its model (they shape the feature space)."""
ID_PATTERN = MODEL_NAME_REGEX
"""A challenger id is written like a model name."""
ID_LENGTH = MODEL_NAME_MAX_LENGTH


def config_json(config: ModelConfig) -> str:
    return json.dumps(config.model_dump(mode="json"), sort_keys=True)


def different_fields(champion: ModelConfig, challenger: ModelConfig) -> list[str]:
    """The ``SHARED_FIELDS`` on which the two configurations differ; ``normalize`` too where the
    model is served unit rows and the challenger would read raw values (they cannot be recovered)."""
    fields = [f for f in SHARED_FIELDS if getattr(champion, f) != getattr(challenger, f)]
    modes = (champion.request_normalize, challenger.request_normalize)
    if "normalize" not in fields and modes == ("l2", "none"):
        fields.append("normalize")
    return fields


def served_to(challenger: ModelConfig, champion: ModelConfig, vector: SparseVector) -> SparseVector:
    """The vector ``challenger`` reads of the one its model was served: scaled to unit L2 norm where
    the model reads raw values (``normalize: "auto"`` on the ensemble) and the challenger, as a model
    of its own (and once promoted), is served unit rows; else the same vector."""
    if challenger.request_normalize == "l2" and champion.request_normalize == "none":
        indices, values = vector
        return indices, unit_l2(values)
    return vector


@dataclass
class Challenger:
    """One challenger's state; see the module docstring."""

    config: ModelConfig
    learner: OnlineLearner
    measures: Measures
    drift: DriftMonitor
    since: int
    """The log position of the entry that added it (it learned every label after)."""
    updates: int = 0
    shadow_predictions: int = 0
    """Predictions this process scored in shadow (not state)."""
    shadow_agreements: int = 0
    """Of those, the ones whose label matched the champion's."""
    config_text: str = field(default="")

    @classmethod
    def fresh(cls, config: ModelConfig, memory_budget: int, since: int) -> Challenger:
        objective = Objective(alpha_p=config.alpha_p, c_p=config.c_p)
        return cls(
            config=config,
            learner=config.build_learner(memory_budget),
            measures=Measures(objective),
            drift=DriftMonitor(config.objective, config.alpha_p, config.c_p),
            since=since,
            config_text=config_json(config),
        )

    def learn(self, vector: SparseVector, y: int, position: int) -> None:
        """Learn one label (after the champion did), counting its prequential mistake."""
        info = self.learner.learn(vector, y)
        self.updates += info.updated
        self.measures.update(y, info.prediction)
        self.drift.observe(y, info.prediction, position)

    def shadow(self, vector: SparseVector, champion_label: int) -> None:
        label = 1 if self.learner.score(vector) >= 0.0 else -1
        self.shadow_predictions += 1
        self.shadow_agreements += label == champion_label

    def to_state(self) -> dict[str, Any]:
        return {
            "config": self.config_text,
            "learner": self.learner.to_state(),
            "measures": self.measures.to_state(),
            "drift": self.drift.to_state(),
            "since": self.since,
            "updates": self.updates,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], memory_budget: int) -> Challenger:
        config = ModelConfig.model_validate_json(state["config"])
        challenger = cls.fresh(config, memory_budget, int(state["since"]))
        challenger.learner.load_state(state["learner"])
        challenger.measures.load_state(state["measures"])
        challenger.drift.load_state(state["drift"])
        challenger.updates = int(state["updates"])
        return challenger

    def describe(self, memory_budget: int) -> dict[str, Any]:
        shown = self.config.model_dump(mode="json")
        shown["algorithm"] = self.config.resolved_algorithm(memory_budget)
        return {
            "config": shown,
            "since_version": self.since,
            "labels": self.measures.labels,
            "updates": self.updates,
            "state_bytes": self.learner.state_nbytes(),
            "measures": self.measures.summary(),
            "drift": self.drift.describe(),
            "shadow": {
                "predictions": self.shadow_predictions,
                "agreement": (
                    self.shadow_agreements / self.shadow_predictions if self.shadow_predictions else None
                ),
            },
        }
