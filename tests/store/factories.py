"""Small builders shared by the store tests."""

from __future__ import annotations

import time
from typing import cast

import numpy as np
import redis

from model_store import Appended, Example, LabelOutcome, ModelStore, PendingPrediction, make_prediction_id

WINDOW = 60.0
"""The label window the tests store pending predictions with (seconds)."""
DONE_TTL = 120.0
"""How long the tests' done markers last (seconds)."""
HOLDER = "replica-a"
"""The checkpoint-writer lease holder the tests write checkpoints as."""


def example(seed: int) -> Example:
    """A small sparse example whose values depend on ``seed``."""
    rng = np.random.default_rng(seed)
    indices = np.sort(rng.choice(1000, size=5, replace=False)).astype(np.int64)
    return Example(rng.standard_normal(5), indices=indices)


def pending(model: str, generation: int, seed: int = 0, at: float | None = None) -> PendingPrediction:
    """A pending prediction made at ``at`` (default: now)."""
    predicted_at = time.time() if at is None else at
    return PendingPrediction(
        prediction_id=make_prediction_id(model, generation, predicted_at),
        example=example(seed),
        yhat=1 if seed % 2 else -1,
        score=float(seed) - 0.5,
        predicted_at=predicted_at,
    )


async def new_model(store: ModelStore, name: str = "m", config: dict | None = None) -> int:
    """A new generation of ``name`` (whatever is there); returns it."""
    record = await store.put_model(name, config or {"algorithm": "acog"}, time.time(), None)
    return record.generation


async def append(store: ModelStore, n: int, model: str = "m", generation: int = 1) -> list[Appended]:
    """Append ``n`` never-predicted labelled examples; their log positions, in order."""
    result = await store.append_examples(
        model, generation, [(example(i), 1 if i % 2 else -1) for i in range(n)], time.time()
    )
    return result.entries


async def label(
    store: ModelStore, items: list[tuple[str, int]], model: str = "m", generation: int = 1
) -> list[LabelOutcome]:
    """``store.label`` with the tests' window and done TTL, labelled now."""
    return await store.label(model, generation, items, time.time(), DONE_TTL, WINDOW)


def snapshot(client: redis.Redis) -> dict[bytes, bytes]:
    """Every key of ``client``'s database and its serialised value (DUMP): equal snapshots mean
    nothing was written in between."""
    return {key: cast(bytes, client.dump(key)) for key in cast(list[bytes], client.keys("*"))}
