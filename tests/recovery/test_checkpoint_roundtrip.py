"""A checkpoint (binary codec, no pickle) restores every learner bit for bit.

Each model applies log entries, is snapshotted through ``model_store``'s codec into bytes,
restored into a fresh runtime, and then both apply the same further entries: scores,
learner states, measures and the feature registry stay identical.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from model_store import Example, LogEntry
from service.engine.checkpoint import CheckpointMismatch, Snapshot
from service.engine.runtime import ModelRuntime
from service.learners import ALGORITHMS
from service.model_config import ModelConfig

D = 6


def entries(n: int, seed: int, named: bool = False) -> list[LogEntry]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        values = rng.normal(size=D)
        values /= np.linalg.norm(values)
        y = 1 if values[0] + 0.3 * rng.normal() > 0.2 else -1
        if named:
            keep = rng.random(D) < 0.7
            example = Example.named(tuple(f"f{j}" for j in np.flatnonzero(keep)), values[keep])
        else:
            example = Example.sparse(np.arange(D), values)
        out.append(
            LogEntry(f"{1000 + i}-0", i + 1, f"p{i}", example, y, int(rng.choice([-1, 1, 0])), 1.0, 2.0)
        )
    return out


CONFIGS: list[dict[str, Any]] = [
    *(
        {
            "algorithm": name,
            "n_features": D,
            **({"eta": 0.5} if "eta" in ALGORITHMS[name].param_spec() else {}),
        }
        for name in sorted(ALGORITHMS)
    ),
    {"algorithm": "acog", "n_features": D},  # eta auto (an ensemble) with the intercept
    {"algorithm": "ssacog", "n_features": D, "sketch_size": 2, "selection": "window", "selection_window": 7},
    {"algorithm": "acog-diag", "max_features": D + 2},  # an open named schema
    # a forest whose trees fill their budget within the 60 labels
    {"algorithm": "amf", "n_features": D, "forest": {"n_estimators": 3, "max_nodes": 31, "seed": 5}},
    # nearest neighbours whose window wraps within the 60 labels
    {"algorithm": "knn", "n_features": D, "knn": {"window": 23, "weighting": "distance"}},
]


@pytest.mark.parametrize("spec", CONFIGS, ids=lambda c: f"{c.get('algorithm')}-{'-'.join(sorted(c))}")
def test_checkpoint_round_trip_is_exact(spec: dict[str, Any]) -> None:
    config = ModelConfig.model_validate(spec).pinned()
    named = config.named
    original = ModelRuntime("m", 1, config, 2**29, window=25)
    for entry in entries(60, seed=1, named=named):
        original.apply(entry)
    blob = original.snapshot().encode()
    assert isinstance(blob, bytes) and b"pickle" not in blob

    restored = ModelRuntime("m", 1, config, 2**29, window=25)
    restored.restore(Snapshot.decode(blob, 1, restored.config_json))
    assert (restored.version, restored.updates, restored.applied_id) == (60, original.updates, "1059-0")
    later = entries(40, seed=2, named=named)
    later = [
        LogEntry(f"{2000 + i}-0", 61 + i, e.prediction_id, e.example, e.y, e.yhat, 1.0, 2.0)
        for i, e in enumerate(later)
    ]
    for entry in later:
        a, b = original.apply(entry), restored.apply(entry)
        assert a is not None and b is not None
        assert replace(a, update_seconds=0.0) == replace(b, update_seconds=0.0)
        vector = original.features.vector(entry.example)
        assert original.score(vector) == restored.score(restored.features.vector(entry.example))
    assert _flat(original.learner.to_state()) == _flat(restored.learner.to_state())
    assert original.measures.counts == restored.measures.counts
    assert original.window.counts == restored.window.counts
    assert original.drift.detector == restored.drift.detector
    if named:
        assert original.features.registry.names == restored.features.registry.names  # type: ignore[union-attr]


def test_a_checkpoint_of_another_generation_is_refused() -> None:
    config = ModelConfig.model_validate({"n_features": D}).pinned()
    runtime = ModelRuntime("m", 1, config, 2**29, window=5)
    blob = runtime.snapshot().encode()
    with pytest.raises(CheckpointMismatch):
        Snapshot.decode(blob, 2, runtime.config_json)


def _flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}/"))
        elif isinstance(value, np.ndarray):
            out[f"{prefix}{key}"] = (value.dtype.str, value.shape, value.tobytes())
        else:
            out[f"{prefix}{key}"] = value
    return out
