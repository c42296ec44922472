"""Rollback in-process: two engines on one store; the retained checkpoints, a rollback on one engine
that the other follows, the state bit for bit the checkpoint's, and the refusals that change nothing."""

from __future__ import annotations

import numpy as np
import pytest

from service.engine import InvalidRequest, LabelItem, ModelGone, UnknownModel

from .test_engine import CONFIG, Replicas, label, reference, rows, until, weights

pytestmark = pytest.mark.anyio


async def test_a_rollback_restores_the_checkpoint_as_a_new_generation_everywhere(replicas: Replicas) -> None:
    a = await replicas.start(checkpoint_every_events=40, checkpoints_kept=3)
    b = await replicas.start(checkpoint_every_events=40, checkpoints_kept=3)
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    X, y = rows(160, seed=21)
    for end in (40, 80, 120):  # a checkpoint after each 40
        await label(a, "m", X[end - 40 : end], y[end - 40 : end])
        await until(lambda e=end: a.view("m").checkpoint_version == e == b.view("m").checkpoint_version, 5.0)
    kept = await b.rollbacks.checkpoints("m")
    assert [(c.generation, c.version) for c in kept] == [(1, 120), (1, 80), (1, 40)]
    old, _ = await a.predict("m", X[150:151])

    record = await b.rollbacks.rollback("m", 80)
    assert record.generation == 2 and b.view("m").version == 0
    await until(lambda: a.replicas["m"].generation == 2)
    for engine in (a, b):
        assert np.array_equal(weights(engine, "m"), reference(X[:80], y[:80]).weights())  # type: ignore[attr-defined]
    measures_at_80 = a.view("m").measures
    assert measures_at_80 is not None and measures_at_80.t_p + measures_at_80.t_n == 80
    [late] = await a.feedback([LabelItem.read(old[0].prediction_id, 1)])
    assert isinstance(late.error, ModelGone)  # a label for the rolled-back generation is refused

    await label(a, "m", X[120:160], y[120:160])  # learns on top of the checkpoint: 80 then 40 more
    expected = reference(X[:80] + X[120:160], y[:80] + y[120:160]).weights()  # type: ignore[attr-defined]
    await until(lambda: b.view("m").version == 40)
    fresh = await replicas.start()
    for engine in (a, b, fresh):
        assert np.array_equal(weights(engine, "m"), expected)
        assert engine.view("m").drift_detections == a.view("m").drift_detections


async def test_refusals_change_nothing(replicas: Replicas) -> None:
    a = await replicas.start(checkpoint_every_events=40, checkpoints_kept=2)
    await a.put_model("m", CONFIG)
    X, y = rows(50, seed=22)
    await label(a, "m", X[:40], y[:40])
    await until(lambda: a.view("m").checkpoint_version == 40, 5.0)
    await label(a, "m", X[40:], y[40:])
    with pytest.raises(InvalidRequest) as refused:
        await a.rollbacks.rollback("m", 41)
    assert refused.value.field == "version" and "[40" in refused.value.problem
    assert a.replicas["m"].generation == 1 and a.view("m").version == 50
    with pytest.raises(UnknownModel):
        await a.rollbacks.rollback("nope", 0)
    with pytest.raises(UnknownModel):
        await a.rollbacks.checkpoints("nope")
