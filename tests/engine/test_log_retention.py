"""ACOG_LOG_RETAIN_ENTRIES through the engine: its checkpoint writes keep that much of the log, and
a replica recovers from the checkpoint as before (the retained entries are history, not replayed)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from service.settings import Settings

from .test_engine import CONFIG, Replicas, label, reference, rows, until, weights

pytestmark = pytest.mark.anyio


async def test_checkpoints_keep_the_retained_entries_and_recovery_is_unchanged(replicas: Replicas) -> None:
    a = await replicas.start(checkpoint_every_events=20, checkpoints_kept=1, log_retain_entries=50)
    await a.put_model("m", CONFIG)
    X, y = rows(120, seed=11)
    await label(a, "m", X, y)
    await until(lambda: a.replicas["m"].is_writer, within=5.0)
    await a.checkpoint("m")
    generation = a.replicas["m"].generation
    log = await a.store.read_log("m", generation, "0-0", 1000)
    assert [e.seq for e in log] == list(range(71, 121))  # without the retention: only entry 120
    fresh = await replicas.start(log_retain_entries=50)
    assert fresh.view("m").version == 120
    assert np.array_equal(weights(fresh, "m"), reference(X, y).weights())  # type: ignore[attr-defined]


def test_a_retention_is_set_by_entries_or_by_seconds() -> None:
    with pytest.raises(ValidationError, match="not both"):
        Settings(log_retain_entries=10, log_retain_seconds=60.0)
    assert Settings(log_retain_seconds=60.0).log_retain_seconds == 60.0
