"""A declared change of a model's feature schema: the request, its plan, and the log event.

An admin declares the change on a live model with named features (``POST /models/{name}/schema``)
in one of two forms:

- ``{"feature_names": [...]}``: the new name list; the names the model had and keeps *survive*
  (S = O ∩ N), the new ones are *augmented*, the others *vanish*;
- ``{"vanished": [...], "augmented": [...]}``: the names that go and the names that come (either
  list may be empty, not both).

Only named schemas change [decision]: a name identifies a feature on both sides of the change, so
an example predicted before it and labelled after it is still read right (its vanished names are
dropped, its survivors found by name). An index means nothing across a change; a model with
``n_features`` is refused (``learner.migrate`` still takes index migrations in the library).

:func:`plan` checks it against the model's current schema (every problem is a
:class:`SchemaChangeError` naming the field) and returns a :class:`SchemaChange`: the
:class:`~service.learners.migration.FeatureMigration` the learner takes, the model configuration of
the new schema, and the names on each side. Its JSON (:meth:`SchemaChange.to_json`) is the body of
the ``schema`` event written to the model's label log, self-contained, so that every replica and
every recovery applies the same change at the same point of the log.

The model keeps its generation and its history: its learner migrates
(:meth:`service.learners.base.Learner.migrate`; OPID compresses the vanished features first), its
measures carry on. An open schema (``max_features``) keeps its capacity: the survivors keep their
names, the augmented names are registered after them, and the free slots stay free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .learners.migration import FeatureMigration
from .model_config import FeatureName, ModelConfig

EVENT_KIND = "schema"
"""The ``kind`` of the label-log entry that carries a schema change."""


class SchemaChangeError(ValueError):
    """A declared change does not fit the model's schema; ``field`` says which part of the request."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class SchemaChangeRequest(BaseModel):
    """The body of ``POST /models/{name}/schema``: one of the two forms of the module docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    feature_names: list[FeatureName] | None = Field(
        None, min_length=1, description="the new name list (names kept survive, new ones are augmented)"
    )
    vanished: list[FeatureName] | None = Field(None, description="names that leave the schema")
    augmented: list[FeatureName] | None = Field(None, description="names that join the schema")

    @model_validator(mode="after")
    def _one_form(self) -> SchemaChangeRequest:
        by_list = self.feature_names is not None
        by_difference = self.vanished is not None or self.augmented is not None
        if by_list == by_difference:
            raise ValueError('give either "feature_names" or "vanished" and/or "augmented"')
        return self


@dataclass(frozen=True)
class SchemaChange:
    """A checked change: what the learner takes, the new configuration, and the names involved."""

    migration: FeatureMigration
    config: ModelConfig
    names: tuple[str, ...]  # the new schema's names, in index order
    survived: tuple[str, ...]
    vanished: tuple[str, ...]
    augmented: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "migration": self.migration.to_json(),
            "config": self.config.model_dump(mode="json"),
            "names": list(self.names),
            "survived": list(self.survived),
            "vanished": list(self.vanished),
            "augmented": list(self.augmented),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SchemaChange:
        return cls(
            migration=FeatureMigration.from_json(data["migration"]),
            config=ModelConfig.model_validate(data["config"]),
            names=tuple(data["names"]),
            survived=tuple(data["survived"]),
            vanished=tuple(data["vanished"]),
            augmented=tuple(data["augmented"]),
        )


def plan(config: ModelConfig, registered: Sequence[str], request: SchemaChangeRequest) -> SchemaChange:
    """The change ``request`` declares for a model with ``config`` whose registry holds
    ``registered`` (its names, in index order)."""
    if not config.named:
        raise SchemaChangeError(
            "model",
            "has an index schema (n_features): only named features (feature_names / "
            "max_features) can change, because a name, not an index, identifies a feature across a change",
        )
    old = list(registered)
    if request.feature_names is not None:
        new = list(request.feature_names)
        if len(set(new)) != len(new):
            raise SchemaChangeError("feature_names", f"repeats {_first_repeat(new)!r}")
        vanished = [n for n in old if n not in set(new)]
        augmented = [n for n in new if n not in set(old)]
        field = "feature_names"
    else:
        vanished, augmented = list(request.vanished or []), list(request.augmented or [])
        for name, values in (("vanished", vanished), ("augmented", augmented)):
            if len(set(values)) != len(values):
                raise SchemaChangeError(name, f"repeats {_first_repeat(values)!r}")
        unknown = [n for n in vanished if n not in set(old)]
        if unknown:
            raise SchemaChangeError("vanished", f"{_names(unknown)} not in the model's schema")
        present = [n for n in augmented if n in set(old)]
        if present:
            raise SchemaChangeError("augmented", f"{_names(present)} already in the model's schema")
        gone = set(vanished)
        new = [n for n in old if n not in gone] + augmented
        field = "augmented" if augmented else "vanished"
    if not vanished and not augmented:
        raise SchemaChangeError(field, "changes nothing: no feature vanishes and none is added")
    if not new:
        raise SchemaChangeError(field, "leaves the model without features")
    capacity = config.max_features
    if capacity is not None and len(new) > capacity:
        raise SchemaChangeError(field, f"gives {len(new)} names, more than max_features = {capacity}")
    new_config = ModelConfig.model_validate({**config.model_dump(mode="json"), "feature_names": new})
    width_old, width_new = (len(old), len(new)) if capacity is None else (capacity, capacity)
    source = np.full(width_new, -1, dtype=np.int64)
    position = {name: i for i, name in enumerate(old)}
    for j, name in enumerate(new):
        source[j] = position.get(name, -1)
    migration = FeatureMigration(width_old, source)
    survived = [n for n in new if n in position]
    return SchemaChange(migration, new_config, tuple(new), tuple(survived), tuple(vanished), tuple(augmented))


def _first_repeat(values: Sequence[Any]) -> Any:
    seen: set[Any] = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)
    return None


def _names(names: Sequence[str]) -> str:
    """``'a', 'b' are`` (at most five shown)."""
    shown = ", ".join(repr(n) for n in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return f"{shown}{more} {'is' if len(names) == 1 else 'are'}"
