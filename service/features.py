"""Turning a request's ``features`` into the vector a learner reads, and the example we store.

Three input forms, chosen by the model's schema:

- **dense**: a list of ``n_features`` numbers;
- **sparse**: ``{"indices": [...], "values": [...]}`` (0-based indices below ``n_features``);
- **named**: ``{"name": value, ...}`` for models with ``feature_names`` and/or
  ``max_features``. An absent name is *missing*; an explicit 0 is a *value* (it registers the
  name). A closed schema (``feature_names`` only) refuses other names and also takes a dense
  list in ``feature_names`` order.

The vector is L2-normalised (``normalize: "l2"``, or ``"auto"`` for a learner other than the
``eta="auto"`` ensemble, which normalises for its members; a zero vector stays zero) before it is
scored and stored, so a replay reads exactly what was scored.

**Presence.** For most learners an explicit 0 and an absent feature are the same thing, and the
vector they receive holds the non-zero entries only. A learner that declares ``needs_presence``
(OLI2DS: features come and go) receives the *present* features instead, explicit zeros kept:
every entry of a dense list, every index of a sparse object, every name of a named object.

Named features go through the model's :class:`FeatureRegistry`, which gives each name an
index the first time it appears **in the label log** (in the sorted order of the names of
that example). Because indices are assigned when labels are applied, in log order, every
replica of a model builds the same registry. At prediction time a name the registry has
not seen yet contributes nothing to the score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from model_store import Example

from .learners import ALGORITHMS
from .learners.errors import InvalidInput
from .learners.inputs import SparseVector, canonical, canonical_dense
from .model_config import ModelConfig
from .normalization import unit_l2


class FeatureError(ValueError):
    """A request's features cannot be read for this model; ``field`` says where."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class _Index(dict[str, int]):
    """Name -> index; ``index[name]`` is ``-1`` for a name not registered (``get`` is unchanged)."""

    def __missing__(self, name: str) -> int:
        return -1


@dataclass
class FeatureRegistry:
    """Names -> indices for a named schema; persisted with the model's checkpoints."""

    capacity: int
    closed: bool
    names: list[str] = field(default_factory=list)
    _index: _Index = field(default_factory=_Index, repr=False)

    def __post_init__(self) -> None:
        self._index = _Index((name, i) for i, name in enumerate(self.names))

    def index_of(self, name: str) -> int | None:
        return self._index.get(name)

    def indices(self, names: Iterable[Any], count: int) -> np.ndarray:
        """The indices of ``count`` names as int64, ``-1`` for a name not registered (registers
        nothing)."""
        return np.fromiter(map(self._index.__getitem__, names), np.int64, count)

    def register(self, names: Sequence[str]) -> np.ndarray:
        """Indices of ``names``, registering new ones while there is room (-1: no room)."""
        out = np.empty(len(names), dtype=np.int64)
        for k, name in enumerate(names):
            index = self._index.get(name)
            if index is None and not self.closed and len(self.names) < self.capacity:
                index = len(self.names)
                self.names.append(name)
                self._index[name] = index
            out[k] = -1 if index is None else index
        return out

    def to_state(self) -> dict[str, Any]:
        return {"names": list(self.names)}

    def load_state(self, state: Mapping[str, Any]) -> None:
        names = [str(n) for n in state["names"]]
        if len(names) > self.capacity or len(set(names)) != len(names):
            raise ValueError("registry state does not fit this model's schema")
        self.names = names
        self.__post_init__()


def needs_presence(config: ModelConfig) -> bool:
    """Whether the model's learner reads which features are present (explicit zeros kept)."""
    learner = ALGORITHMS.get(config.algorithm) if config.algorithm is not None else None
    return bool(getattr(learner, "needs_presence", False))


class FeatureSpace:
    """A model's input schema: parses requests, and maps stored examples to vectors."""

    def __init__(self, config: ModelConfig, vanished: Sequence[str] = ()) -> None:
        """``vanished``: after schema changes (:mod:`service.schema_change`), the names that left, so
        that a request still naming one is refused saying so, and a label of an example predicted
        before the change is read without them."""
        self.config = config
        self.vanished = frozenset(vanished)
        self.dimension = config.dimension
        self.keep_zeros = needs_presence(config)
        self.unit_rows = config.request_normalize == "l2"
        """Whether a request's vector is scaled to unit L2 norm (read once: a pydantic property)."""
        self.registry: FeatureRegistry | None = None
        if config.named:
            self.registry = FeatureRegistry(
                capacity=config.dimension,
                closed=not config.open_schema,
                names=list(config.feature_names or []),
            )

    # --- requests -------------------------------------------------------------------------

    def parse(self, features: Any, field: str = "features") -> tuple[Example, SparseVector]:
        """The example to store and the vector to score now (both normalised)."""
        if self.registry is None:
            vector = self._normalised(self._indexed(features, field))
            # canonical() checked the pair: int64 indices strictly increasing, finite float64 values
            return Example.trusted(vector[1], vector[0]), vector
        names, values = self._named(features, field)
        values = self._normalised((np.empty(0, np.int64), values))[1]
        example = Example.named(names, values)
        return example, self._lookup(names, values)

    def _indexed(self, features: Any, field: str) -> SparseVector:
        if isinstance(features, list | tuple):  # a dense list (first: the common case, and no ABC check)
            x: Any = np.asarray(features, dtype=np.float64)
            convert: Callable[..., SparseVector] = canonical_dense
        elif isinstance(features, Mapping):
            if set(features) != {"indices", "values"}:
                raise FeatureError(
                    field, 'must be a list of numbers or {"indices": [...], "values": [...]} for this model'
                )
            x = (np.asarray(features["indices"], dtype=np.int64), np.asarray(features["values"]))
            if x[0].size > 1 and not bool(np.all(x[0][1:] > x[0][:-1])):
                raise FeatureError(
                    f"{field}.indices",
                    "must be strictly increasing (sorted, each index once); got "
                    f"{features['indices'][:20]!r}",
                )
            convert = canonical
        else:
            raise FeatureError(field, "must be a list of numbers or a sparse {indices, values} object")
        try:
            return convert(x, self.dimension, keep_zeros=self.keep_zeros)
        except InvalidInput as exc:
            raise FeatureError(field, exc.problem.replace("n_features", "the model's n_features")) from None

    def _named(self, features: Any, field: str) -> tuple[tuple[str, ...], np.ndarray]:
        assert self.registry is not None
        if isinstance(features, list | tuple):
            if not self.registry.closed:
                raise FeatureError(field, "this model takes named features: an object {name: value}")
            if len(features) != len(self.registry.names):
                raise FeatureError(
                    field, f"has length {len(features)}, expected {len(self.registry.names)} (feature_names)"
                )
            features = dict(zip(self.registry.names, features, strict=True))
        if not isinstance(features, Mapping) or not features:
            raise FeatureError(field, "must be a non-empty object {name: value} for this model")
        names = tuple(sorted(features))
        gone = [n for n in names if n in self.vanished]
        if gone:
            shown = ", ".join(repr(n) for n in gone[:5]) + (
                f" and {len(gone) - 5} more" if len(gone) > 5 else ""
            )
            raise FeatureError(field, self._old_schema(f"names vanished features {shown}"))
        values = np.array([features[n] for n in names], dtype=np.float64)
        if not np.isfinite(values).all():
            raise FeatureError(field, "contains NaN or inf")
        if self.registry.closed:
            unknown = [n for n in names if self.registry.index_of(n) is None]
            if unknown:
                shown = ", ".join(repr(n) for n in unknown[:5])
                raise FeatureError(field, f"unknown feature names {shown} (the schema is closed)")
        elif len(names) > self.dimension:
            raise FeatureError(field, f"has {len(names)} names, more than max_features = {self.dimension}")
        return names, values

    def _old_schema(self, what: str) -> str:
        vanished = ", ".join(sorted(self.vanished)[:10]) or "none"
        return (
            f"{what}: the model's feature schema changed (vanished: {vanished}); send features of "
            f"the new schema ({self.dimension} features)"
        )

    def _normalised(self, vector: SparseVector) -> SparseVector:
        idx, val = vector
        if self.unit_rows:
            val = unit_l2(val)
        return idx, val

    def _lookup(self, names: Sequence[str], values: np.ndarray) -> SparseVector:
        """Known names only (prediction time: unseen names weigh nothing yet)."""
        assert self.registry is not None
        pairs = [
            (i, v) for n, v in zip(names, values, strict=True) if (i := self.registry.index_of(n)) is not None
        ]
        return self._sorted(pairs, self.keep_zeros)

    # --- stored examples (apply time, in log order) ---------------------------------------

    def vector(self, example: Example) -> SparseVector:
        """The learner's input for a logged example; registers new names (open schema)."""
        return self.vector_reporting(example)[0]

    def vector_reporting(self, example: Example) -> tuple[SparseVector, tuple[str, ...]]:
        """:meth:`vector`, and the example's names that found no slot (an open schema whose
        ``max_features`` slots are all taken): they are ignored, and the caller reports them."""
        if example.indices is not None:
            return (example.indices, example.values), ()
        assert self.registry is not None and example.names is not None
        names, values = list(example.names), example.values
        if self.vanished:  # an example predicted before a schema change: its vanished names are dropped
            kept = [k for k, name in enumerate(names) if name not in self.vanished]
            names, values = [names[k] for k in kept], values[kept]
        indices = self.registry.register(names)
        pairs = [(int(i), v) for i, v in zip(indices, values, strict=True) if i >= 0]
        ignored = tuple(name for name, i in zip(names, indices, strict=True) if i < 0)
        return self._sorted(pairs, self.keep_zeros), ignored

    def known_vector(self, example: Example) -> SparseVector:
        """:meth:`vector` of a logged example this space has applied already, registering nothing:
        each of its names was registered then, or found no slot then and finds none now."""
        if example.indices is not None:
            return example.indices, example.values
        assert example.names is not None
        names, values = list(example.names), example.values
        if self.vanished:
            kept = [k for k, name in enumerate(names) if name not in self.vanished]
            names, values = [names[k] for k in kept], values[kept]
        return self._lookup(names, values)

    def unregistrable(self, names: Sequence[str]) -> tuple[str, ...]:
        """Of a request's ``names``, those that are not registered and cannot be any more (the
        registry is full): a prediction ignores them, and so will the label."""
        registry = self.registry
        if registry is None or registry.closed or len(registry.names) < registry.capacity:
            return ()
        return tuple(n for n in names if registry.index_of(n) is None)

    def name_of(self, index: int) -> str:
        """The name of a learner's feature slot: the registered name, ``"(intercept)"`` past the
        schema, else the index written out."""
        if self.registry is not None and index < len(self.registry.names):
            return self.registry.names[index]
        return "(intercept)" if index >= self.dimension else str(index)

    def missing_share(self, example: Example) -> float:
        """The share of the model's known features absent from a logged example (after
        :meth:`vector` registered its names): ``1 - |present| / |registered names|`` for a named
        schema, ``1 - |stored entries| / n_features`` for an indexed one (where a learner that does
        not read presence never stored the zeros)."""
        if example.names is not None and self.registry is not None:
            known = len(self.registry.names)
            present = sum(self.registry.index_of(n) is not None for n in example.names)
        else:
            known, present = self.dimension, len(example.values)
        return 1.0 - present / known if known else 0.0

    @staticmethod
    def _sorted(pairs: list[tuple[int, float]], keep_zeros: bool = False) -> SparseVector:
        """``(indices, values)`` in index order; zero values dropped unless ``keep_zeros``."""
        pairs.sort()
        idx = np.fromiter((p[0] for p in pairs), dtype=np.int64, count=len(pairs))
        val = np.fromiter((p[1] for p in pairs), dtype=np.float64, count=len(pairs))
        if keep_zeros:
            return idx, val
        keep = val != 0.0
        return idx[keep], val[keep]
