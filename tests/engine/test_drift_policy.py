"""The drift policy through the engine: set on one replica, written to the log, applied by both; under
``reset`` both restart their learner at the same labels and keep the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from service.engine import InvalidRequest

from .test_engine import CONFIG, Replicas, label, rows, until, weights

pytestmark = pytest.mark.anyio


async def test_both_replicas_reset_at_the_same_labels(replicas: Replicas) -> None:
    a, b = await replicas.start(), await replicas.start()
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    assert await a.drift_policies.set("m", "reset") == 1
    X, y = rows(1_200, seed=31)
    flipped = [-v for v in y[600:]]  # the concept turns over at label 600
    for start in range(0, 1_200, 100):
        labels = y[start : start + 100] if start < 600 else flipped[start - 600 : start - 500]
        await label(a, "m", X[start : start + 100], labels)
    await until(lambda: b.view("m").version == 1_201)
    state_a, state_b = a.view("m", detail=True).state["drift"], b.view("m", detail=True).state["drift"]
    assert state_a == state_b and state_a["on_drift"] == "reset" and state_a["resets"] >= 1
    assert state_a["last_detection_version"] > 601
    assert np.array_equal(weights(a, "m"), weights(b, "m"))
    fresh = await replicas.start()
    assert fresh.view("m", detail=True).state["drift"] == state_a
    assert np.array_equal(weights(fresh, "m"), weights(a, "m"))
    with pytest.raises(InvalidRequest):
        await a.drift_policies.set("m", "panic")
