"""Small builders shared by the store tests."""

from __future__ import annotations

import time
from typing import cast

import numpy as np
import redis

from model_store import (
    Appended,
    Example,
    LabelOutcome,
    ModelStore,
    PendingPrediction,
    PredictionIdError,
    RedisModelStore,
    make_prediction_id,
    parse_prediction_id,
)
from model_store.keys import GenerationKeys
from model_store.redis_layout import pending_prediction

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
    """``store.label`` with the tests' window and done TTL, labelled now (the ids read here)."""
    parsed = [(parse_prediction_id(pid), y) for pid, y in items]
    return await store.label(model, generation, parsed, time.time(), DONE_TTL, WINDOW)


def snapshot(client: redis.Redis) -> dict[bytes, bytes]:
    """Every key of ``client``'s database and its serialised value (DUMP): equal snapshots mean
    nothing was written in between."""
    return {key: cast(bytes, client.dump(key)) for key in cast(list[bytes], client.keys("*"))}


# --- reading the store's keys: what the Lua scripts read and write, for tests to look at -----------


async def log_sequence(store: RedisModelStore, model: str, generation: int) -> int:
    """The generation's label counter: the number of the newest entry ever appended (0 when none), as
    the append script keeps it in its key (the service never reads it: each entry carries its number)."""
    return int(await store._redis.get(GenerationKeys(model, generation).sequence) or 0)


async def get_pending(store: RedisModelStore, prediction_id: str) -> PendingPrediction | None:
    """The pending prediction under ``prediction_id`` as the label script finds it, or None
    (labelled, expired, unknown or malformed)."""
    try:
        pid = parse_prediction_id(prediction_id)
    except PredictionIdError:
        return None
    key = GenerationKeys(pid.model, pid.generation).pending(pid.token)
    fields = cast(dict[bytes, bytes], await store._redis.hgetall(key))
    if fields.get(b"pid") != prediction_id.encode("ascii"):
        return None
    return pending_prediction(fields)
