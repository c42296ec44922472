"""What a model remembers of its schema changes, and how one is applied: the engine-facing half of
:mod:`service.schema_change`.

A model's log can hold ``schema`` events among its labels. Applying one, in log order, is:

1. the learner migrates (:meth:`~service.learners.base.Learner.migrate`), so ``opid`` solves its
   C-stage and starts its E-stage, and every other learner keeps its survived weights;
2. the feature space becomes the new schema's, refusing the names that vanished (so an old-schema
   request gets a 4xx naming them) and reading examples predicted before the change without them;
3. the history records the change (its log position, the names on each side, the label count).

:class:`SchemaHistory` holds the current configuration, every name that vanished (and did not come
back), and the changes; it goes into every checkpoint (:meth:`to_state`), so a replica or a
restarted process that loads a checkpoint taken after a change rebuilds the learner and the feature
space of the *new* schema before it loads their state (:meth:`restore_learner`), and one that
replays the event from the log ends in the same bits as the process that applied it first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .features import FeatureSpace
from .learners import OnlineLearner
from .model_config import ModelConfig
from .schema_change import SchemaChange


@dataclass
class SchemaHistory:
    """A model's schema: its current configuration, the names that vanished, the changes so far."""

    config: ModelConfig
    vanished: list[str] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def feature_space(self) -> FeatureSpace:
        """The feature space of the current schema (refusing the vanished names)."""
        return FeatureSpace(self.config, vanished=self.vanished)

    def apply(
        self, change: SchemaChange, learner: OnlineLearner, version: int, labels: int
    ) -> tuple[OnlineLearner, FeatureSpace]:
        """The learner and feature space after ``change``, which is log entry ``version``, applied
        after ``labels`` labels. Nothing is replaced: the caller installs what this returns (and
        nothing changes if the migration raises)."""
        migrated = learner.migrate(change.migration)
        came_back = set(change.augmented)
        self.vanished = sorted((set(self.vanished) | set(change.vanished)) - came_back)
        self.config = change.config
        self.changes.append(
            {
                "version": version,
                "labels_before": labels,
                "survived": list(change.survived),
                "vanished": list(change.vanished),
                "augmented": list(change.augmented),
            }
        )
        return migrated, self.feature_space()

    def describe(self, learner: OnlineLearner, labels: int) -> dict[str, Any]:
        """``GET /models/{name}``'s ``schema``: the changes, the last one's names, the learner's
        phase (``opid``: C before any change, E after) and the labels since the last change."""
        facts = learner.describe().get("opid", {}) if hasattr(learner, "describe") else {}
        out: dict[str, Any] = {
            "changes": len(self.changes),
            "phase": facts.get("phase", "migrated" if self.changes else "original"),
            "features": len(self.config.feature_names or []) or self.config.dimension,
        }
        if self.changes:
            last = self.changes[-1]
            out.update(
                last_change_version=last["version"],
                survived=last["survived"],
                vanished=last["vanished"],
                augmented=last["augmented"],
                labels_since_change=labels - last["labels_before"],
            )
        return out

    # --- checkpoints ------------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        return {
            "config": json.dumps(self.config.model_dump(mode="json"), sort_keys=True),
            "vanished": list(self.vanished),
            "changes": json.dumps(self.changes),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> SchemaHistory:
        return cls(
            config=ModelConfig.model_validate_json(state["config"]),
            vanished=[str(n) for n in state["vanished"]],
            changes=list(json.loads(state["changes"])),
        )

    def restore_learner(self, memory_budget: int, learner_state: Mapping[str, Any]) -> OnlineLearner:
        """A learner of the current schema with ``learner_state`` loaded (from a checkpoint)."""
        learner = self.config.build_learner(memory_budget)
        learner.load_state(learner_state)
        return learner
