"""Challengers: other model configurations that learn, in shadow, from a model's labels.

A challenger is added, replaced and removed by entries of the model's label log
(``CHALLENGER_EVENT``), so every replica holds it from the same label on and applies to it the same
labels in the same order as the model (the champion): its state is a function of the log, like the
champion's, and it is part of the model's checkpoint. It starts afresh at the entry that added it
(or from the log's history, below), and learns every later label right after the champion (test
then train: its prediction before learning the label is what its measures and drift detector
count). It never answers a request: each prediction of the champion is also scored by every
challenger, and only the share of agreement is kept (this process's, not state).

It shares the champion's feature space: the vector a label or request becomes (normalisation,
registered names) is the champion's, so a challenger's configuration must have the same feature
schema, normalisation and label format (``SHARED_FIELDS``); the algorithm and its parameters,
the objective and its costs, ``feature_map`` and ``auto_members`` may differ. A declared schema
change drops every challenger (their learners would need the same migration). At most
``Settings.max_challengers`` per model, a limit written into each adding entry so that the check
is the same on every replica.

Promoting a challenger makes its state (learner, measures, drift detector) the model's, as a new
generation (:mod:`service.engine.challenge`): the state it holds at the promoting entry, bit for bit.

**Started from the log** (``start: "log"``), a challenger first learns the retained history: the
labels of the current generation's log from its oldest retained entry (or the last declared schema
change after it) up to the entry ``to_version`` just before the one that adds it, in the same order
as the model, test then train as always. One process replays them (:func:`replay`) and writes the
challenger's state *into* the adding entry (:func:`put_body`), appended only as entry
``to_version + 1`` (a compare-and-append); every replica applying that entry loads that state, so
all hold the same bits, whatever history each still finds. The state lives as long as the entry,
and the log is trimmed past an entry only behind a checkpoint, which carries the challenger.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from model_store.ids import MODEL_NAME_MAX_LENGTH, MODEL_NAME_REGEX

from .drift import DriftMonitor
from .features import needs_presence
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
START_NOW, START_LOG = "now", "log"
"""Where a challenger starts: from the next label, or from the retained log's history."""
MAX_STATE_BYTES = 8 * 2**20
"""The largest encoded challenger state an adding entry carries (``start: "log"``): 8 MiB, the size
of one checkpoint chunk, so that one log entry stays one modest Redis write and read."""


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


def put_body(header: dict[str, Any], state: bytes | None = None) -> bytes:
    """A challenger entry's body: its JSON header, then, for a challenger started from the log,
    a newline and its encoded state (:func:`model_store.encode_state` of
    :meth:`Challenger.to_state`)."""
    text = json.dumps(header, sort_keys=True).encode()
    return text if state is None else text + b"\n" + state


def read_body(body: bytes) -> tuple[dict[str, Any], bytes | None]:
    """:func:`put_body` read back: the header, and the state if there is one."""
    header, newline, state = body.partition(b"\n")
    return json.loads(header), (state if newline else None)


Reader = Callable[[SparseVector], SparseVector]


def served_to(challenger: ModelConfig, champion: ModelConfig, vector: SparseVector) -> SparseVector:
    """The vector ``challenger`` reads of the one its model was served: scaled to unit L2 norm where
    the model reads raw values (``normalize: "auto"`` on the ensemble) and the challenger, as a model
    of its own (and once promoted), is served unit rows; without explicit zeros where the model keeps
    them (it reads presence) and the challenger does not; else the same vector. What the challenger's
    learner would make of it through its checked entry points, so its unchecked ones read it."""
    return _reading(challenger, champion)(vector)


def _reading(challenger: ModelConfig, champion: ModelConfig) -> Reader:
    scale = challenger.request_normalize == "l2" and champion.request_normalize == "none"
    drop_zeros = needs_presence(champion) and not needs_presence(challenger)
    if not (scale or drop_zeros):
        return _same

    def read(vector: SparseVector) -> SparseVector:
        indices, values = vector
        if drop_zeros:
            keep = values != 0.0
            indices, values = indices[keep], values[keep]
        return indices, unit_l2(values) if scale else values

    return read


def _same(vector: SparseVector) -> SparseVector:
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
    history: dict[str, int | None] | None = None
    """Started from the log: ``labels`` learned from its history, which spans the entries
    ``from_version`` (None when there were none) to ``to_version``; None when started from now."""
    _reader: tuple[ModelConfig, Reader] | None = field(default=None, repr=False)

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

    def reads(self, champion: ModelConfig, vector: SparseVector) -> SparseVector:
        """:func:`served_to` of the model's ``vector``, decided once per model configuration."""
        reader = self._reader
        if reader is None or reader[0] is not champion:
            reader = self._reader = (champion, _reading(self.config, champion))
        return reader[1](vector)

    def learn(self, vector: SparseVector, y: int, position: int) -> None:
        """Learn one label (after the champion did), counting its prequential mistake; ``vector`` is
        what it reads (:meth:`reads`)."""
        info = self.learner.learn_unchecked(vector, y)  # the vector the champion's learner read
        self.updates += info.updated
        self.measures.update(y, info.prediction)
        self.drift.observe(y, info.prediction, position)

    def shadow(self, vector: SparseVector, champion_label: int) -> None:
        label = self.learner.predict_unchecked(vector)  # checked once, where the request was parsed
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
            "history": self.history,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], memory_budget: int) -> Challenger:
        config = ModelConfig.model_validate_json(state["config"])
        challenger = cls.fresh(config, memory_budget, int(state["since"]))
        challenger.learner.load_state(state["learner"])
        challenger.measures.load_state(state["measures"])
        challenger.drift.load_state(state["drift"])
        challenger.updates = int(state["updates"])
        challenger.history = state.get("history")  # absent in checkpoints older than start: "log"
        return challenger

    def describe(self, memory_budget: int) -> dict[str, Any]:
        shown = self.config.model_dump(mode="json")
        shown["algorithm"] = self.config.resolved_algorithm(memory_budget)
        return {
            "config": shown,
            "since_version": self.since,
            "start": START_NOW if self.history is None else START_LOG,
            "history": self.history,
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


def replay(challenger: Challenger, labels: Iterable[tuple[SparseVector, int, int]]) -> None:
    """Have ``challenger`` learn history labels ``(vector it reads, y, log position)`` in order,
    counting them in its ``history`` (see the module docstring)."""
    assert challenger.history is not None
    for vector, y, position in labels:
        challenger.learn(vector, y, position)
        challenger.history["labels"] = int(challenger.history["labels"] or 0) + 1
        if challenger.history["from_version"] is None:
            challenger.history["from_version"] = position
