"""Challengers through the engine: put on one replica, held by both from the same label, shadow scores,
the limit, and a promotion whose state is bit for bit a fresh model of the challenger's configuration
given the labels after the put, on every replica and in a process started afterwards."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from service.engine import InvalidRequest, LabelItem, LimitExceeded, ModelGone, UnknownModel
from service.model_config import ModelConfig
from service.normalization import unit_l2

from .test_engine import CONFIG, D, Replicas, label, rows, until, weights

pytestmark = pytest.mark.anyio
CHALLENGER = ModelConfig.model_validate({"n_features": D, "algorithm": "arow"})


async def test_a_promoted_challenger_is_a_fresh_model_given_the_same_labels(replicas: Replicas) -> None:
    a, b = await replicas.start(max_challengers=1), await replicas.start(max_challengers=1)
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    X, y = rows(300, seed=41)
    await label(a, "m", X[:100], y[:100])
    await a.challenges.put("m", "arow", CHALLENGER)
    await until(lambda: "arow" in b.replicas["m"].runtime.challengers)
    with pytest.raises(LimitExceeded):
        await b.challenges.put("m", "second", CHALLENGER)
    with pytest.raises(InvalidRequest) as refused:
        await a.challenges.put("m", "arow", ModelConfig.model_validate({"n_features": D + 1}))
    assert refused.value.field == "n_features"
    await label(b, "m", X[100:300], y[100:300])
    old, _ = await a.predict("m", X[:3])  # scored in shadow by the challenger too
    await until(lambda: a.view("m").version == 301)
    described = a.view("m", detail=True).state["challengers"]["arow"]
    assert described["since_version"] == 101 and described["labels"] == 200
    assert described["shadow"]["predictions"] == 3
    ca, cb = a.replicas["m"].runtime.challengers["arow"], b.replicas["m"].runtime.challengers["arow"]
    assert np.array_equal(ca.learner.weights(), cb.learner.weights())

    record = await b.challenges.promote("m", "arow")
    assert record.generation == 2 and record.config["algorithm"] == "arow"
    await until(lambda: a.replicas["m"].generation == 2)
    fresh_model = CHALLENGER.pinned().build_learner()
    for x, v in zip(X[100:300], y[100:300], strict=True):
        fresh_model.learn(unit_l2(np.asarray(x)), v)
    late = await replicas.start()
    for engine in (a, b, late):
        assert np.array_equal(weights(engine, "m"), fresh_model.weights())
        assert (
            engine.view("m").version == 0
            and engine.view("m").measures.t_p + engine.view("m").measures.t_n == 200
        )  # type: ignore[union-attr]
        assert engine.replicas["m"].runtime.challengers == {}
    [gone] = await a.feedback([LabelItem.read(old[0].prediction_id, 1)])
    assert isinstance(gone.error, ModelGone)
    with pytest.raises(UnknownModel):
        await a.challenges.promote("m", "arow")


def fresh_given(X: list[list[float]], y: list[int]) -> object:
    learner = CHALLENGER.pinned().build_learner()
    for x, v in zip(X, y, strict=True):
        learner.learn(unit_l2(np.asarray(x)), v)
    return learner


async def test_a_challenger_started_from_the_log_learns_the_retained_history_on_every_replica(
    replicas: Replicas,
) -> None:
    kept = {"checkpoint_every_events": 1000, "checkpoints_kept": 1, "log_retain_entries": 50}
    a, b = await replicas.start(**kept), await replicas.start(**kept)
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    await a.challenges.put("m", "empty", CHALLENGER, start="log")  # nothing to learn yet: from now
    empty = a.view("m", detail=True).state["challengers"]["empty"]
    assert empty["start"] == "log"
    assert empty["history"] == {"labels": 0, "from_version": None, "to_version": 0}
    await a.challenges.delete("m", "empty")
    X, y = rows(300, seed=43)
    positions = await label(a, "m", X[:120], y[:120])
    assert positions == list(range(3, 123))  # after the two challenger entries
    # either replica may hold the writer lease; a's checkpoint request goes to whichever does
    await until(lambda: a.replicas["m"].lease_holder in (a.replica_id, b.replica_id), within=5.0)
    await a.checkpoint("m")  # trims the log to its newest 50 entries: 73 to 122
    await b.challenges.put("m", "arow", CHALLENGER, start="log")
    described = b.view("m", detail=True).state["challengers"]["arow"]
    assert described["history"] == {"labels": 50, "from_version": 73, "to_version": 122}
    assert described["since_version"] == 123 and described["labels"] == 50
    await until(lambda: "arow" in a.replicas["m"].runtime.challengers)
    await b.challenges.put("m", "arow", CHALLENGER, start="log")  # the same again: nothing changes
    assert b.view("m").version == 124
    await label(a, "m", X[120:200], y[120:200])
    await until(lambda: b.view("m").version == 204)
    ca, cb = a.replicas["m"].runtime.challengers["arow"], b.replicas["m"].runtime.challengers["arow"]
    assert np.array_equal(ca.learner.weights(), cb.learner.weights())
    assert ca.measures.counts == cb.measures.counts and ca.history == cb.history

    record = await a.challenges.promote("m", "arow")
    assert record.generation == 2
    await until(lambda: b.replicas["m"].generation == 2)
    expected = fresh_given(X[70:200], y[70:200]).weights()  # type: ignore[attr-defined]
    late = await replicas.start(**kept)
    for engine in (a, b, late):
        assert np.array_equal(weights(engine, "m"), expected)
        counts = engine.view("m").measures
        assert counts.t_p + counts.t_n == 130  # type: ignore[union-attr]


async def test_labels_during_the_replay_and_a_lagging_replica_past_a_trimmed_log(replicas: Replicas) -> None:
    """Labels appended while the history replays (a refused compare-and-append replays them too, then
    appends again): the challenger still learns every label in log order. A replica down meanwhile
    comes back after the log was trimmed past the adding entry, and holds the challenger from the
    checkpoint, bit for bit."""
    kept = {"checkpoint_every_events": 1000, "checkpoints_kept": 1, "log_retain_entries": 10}
    a, b = await replicas.start(**kept), await replicas.start(**kept)
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    X, y = rows(300, seed=44)
    await label(a, "m", X[:100], y[:100])
    await replicas.crash(b)
    starts = range(100, 200, 5)
    put = a.challenges.put("m", "arow", CHALLENGER, start="log")
    _, *batches = await asyncio.gather(put, *(label(a, "m", X[k : k + 5], y[k : k + 5]) for k in starts))
    position = dict(enumerate(range(1, 101))) | {
        k + i: p for k, batch in zip(starts, batches, strict=True) for i, p in enumerate(batch)
    }
    described = a.view("m", detail=True).state["challengers"]["arow"]
    history, since = described["history"], described["since_version"]
    assert history["from_version"] == 1 and since == history["to_version"] + 1
    assert history["labels"] == sum(p < since for p in position.values()) and since not in position.values()
    await label(a, "m", X[200:300], y[200:300])
    await until(lambda: a.replicas["m"].is_writer, within=5.0)
    await a.checkpoint("m")  # trims the log past the adding entry
    first = (await a.store.read_log("m", 1, "0-0", 1))[0].seq
    assert first is not None and first > since
    back = await replicas.start(**kept)  # finds only the checkpoint, which holds the challenger
    ca, cb = a.replicas["m"].runtime.challengers["arow"], back.replicas["m"].runtime.challengers["arow"]
    assert np.array_equal(ca.learner.weights(), cb.learner.weights()) and ca.history == cb.history
    order = sorted(range(200), key=position.__getitem__) + list(range(200, 300))
    expected = fresh_given([X[i] for i in order], [y[i] for i in order]).weights()  # type: ignore[attr-defined]
    await a.challenges.promote("m", "arow")
    await until(lambda: back.replicas["m"].generation == 2)
    for engine in (a, back):
        assert np.array_equal(weights(engine, "m"), expected)
