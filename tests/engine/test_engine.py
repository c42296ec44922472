"""The engine in-process, against a real Redis: two engines (two replicas) on one store.

Faster and more precise than the process-level tests in ``tests/replicas``: the test drives both
engines from one event loop and can stop a replica's follower, crash it without its shutdown,
or wipe the store under it.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
import redis

from model_store import RedisModelStore
from service.engine import (
    Engine,
    LabelConflict,
    LabelItem,
    ModelGone,
    ModelUnavailable,
    StoreLost,
    UnknownModel,
)
from service.engine.cancellation import finish
from service.model_config import ModelConfig
from service.normalization import unit_l2
from service.settings import Settings

pytestmark = pytest.mark.anyio

D = 6
CONFIG = ModelConfig.model_validate({"n_features": D, "eta": 1.0, "loss": "II"})


def settings(**overrides: object) -> Settings:
    base: dict[str, object] = {
        "checkpoint_every_events": 1000,
        "checkpoint_every_seconds": 3600,
        "checkpoint_lease_seconds": 1.0,
        "maintenance_interval_seconds": 3600,
        "redis_timeout_seconds": 2.0,
    }
    return Settings.model_validate({**base, **overrides})


class Replicas:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engines: list[Engine] = []

    async def start(self, **overrides: object) -> Engine:
        engine = Engine(RedisModelStore.from_url(self.url), settings(**overrides))
        await engine.start()
        self.engines.append(engine)
        return engine

    async def crash(self, engine: Engine) -> None:
        """Stop an engine like kill -9 would: its tasks stop where they are; no checkpoint is written
        and no lease released."""
        engine.lifecycle.stopping = True
        for replica in engine.replicas.values():
            replica._stopping = True
        tasks = list(engine.lifecycle.tasks)
        for replica in engine.replicas.values():
            tasks += [replica._follower, replica._upload, replica._appender._task, *replica._pending.calls]
        for task in tasks:
            await finish(task, 3.0)
        self.engines.remove(engine)
        await engine.store.close()

    async def close(self) -> None:
        await asyncio.gather(*(engine.stop() for engine in self.engines))
        for engine in self.engines:
            await engine.store.close()


def rows(n: int, seed: int) -> tuple[list[list[float]], list[int]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0.3, 1, -1)
    return X.tolist(), y.tolist()


async def label(engine: Engine, model: str, X: list[list[float]], y: list[int]) -> list[int]:
    """Predict then label through ``engine``; the log positions of the labels."""
    predictions, _ = await engine.predict(model, X)
    results = await engine.feedback(
        [LabelItem.read(p.prediction_id, label) for p, label in zip(predictions, y, strict=True)]
    )
    assert all(r.applied and r.error is None for r in results), results
    return [r.model_version for r in results if r.model_version is not None]


def reference(X: list[list[float]], y: list[int]) -> object:
    learner = CONFIG.build_learner()
    for x, label_ in zip(X, y, strict=True):
        learner.learn(unit_l2(np.asarray(x)), label_)
    return learner


def weights(engine: Engine, model: str) -> np.ndarray:
    return engine.replicas[model].runtime.learner.weights()


async def until(condition: object, within: float = 2.0) -> float:
    start = time.monotonic()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() - start < within, "condition not met in time"
        await asyncio.sleep(0.005)
    return time.monotonic() - start


async def test_a_replica_applies_labels_acknowledged_by_another(replicas: Replicas) -> None:
    a, b = await replicas.start(), await replicas.start()
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    X, y = rows(200, seed=1)
    lags = []
    for start in range(0, 200, 20):
        seqs = await label(a, "m", X[start : start + 20], y[start : start + 20])
        lags.append(await until(lambda s=seqs[-1]: b.replicas["m"].runtime.version >= s))
    assert max(lags) < 0.5, lags
    expected = reference(X, y).weights()  # type: ignore[attr-defined]
    assert np.array_equal(weights(a, "m"), expected) and np.array_equal(weights(b, "m"), expected)
    assert a.view("m").measures == b.view("m").measures


async def test_a_replica_behind_a_trimmed_log_reloads_a_checkpoint_instead_of_skipping(
    replicas: Replicas,
) -> None:
    a = await replicas.start(checkpoint_every_events=20, checkpoints_kept=1)
    b = await replicas.start(checkpoint_every_events=20, checkpoints_kept=1)
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    replica = b.replicas["m"]
    follower = replica._follower
    assert follower is not None
    replica._stopping = True  # B stops following (a long pause, say) while A goes on
    await finish(follower, 3.0)
    X, y = rows(120, seed=2)
    await label(a, "m", X, y)
    await a.checkpoint("m")  # A holds the lease: writes at 120, the log is trimmed to it
    assert replica.runtime.version < 120
    replica._stopping = False
    replica._follower = asyncio.create_task(replica._follow())
    await until(lambda: replica.runtime.version == 120)
    assert replica.resyncs == 1
    assert np.array_equal(weights(b, "m"), reference(X, y).weights())  # type: ignore[attr-defined]


async def test_one_checkpoint_writer_and_a_takeover_when_it_dies(replicas: Replicas) -> None:
    a = await replicas.start(checkpoint_every_events=25)
    b = await replicas.start(checkpoint_every_events=25)
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    X, y = rows(100, seed=3)
    await label(a, "m", X[:50], y[:50])
    await until(lambda: a.replicas["m"].lease_holder != "" and b.replicas["m"].lease_holder != "")
    holders = {a.replicas["m"].lease_holder, b.replicas["m"].lease_holder}
    assert len(holders) == 1 and holders <= {a.replica_id, b.replica_id}
    writer, other = (a, b) if a.replicas["m"].is_writer else (b, a)
    await until(lambda: writer.view("m").checkpoint_version == 50)
    await replicas.crash(writer)
    await label(other, "m", X[50:], y[50:])
    await until(lambda: other.replicas["m"].is_writer, within=5.0)  # the lease lapsed after 1 s
    await until(lambda: other.view("m").checkpoint_version == 100, within=5.0)
    fresh = await replicas.start()
    assert fresh.view("m").version == 100
    assert np.array_equal(weights(fresh, "m"), reference(X, y).weights())  # type: ignore[attr-defined]


async def test_model_changes_reach_the_other_replica_within_a_second(replicas: Replicas) -> None:
    a, b = await replicas.start(), await replicas.start()
    assert await a.put_model("m", CONFIG) == "created"
    assert await until(lambda: "m" in b.replicas) < 1.0
    assert await b.put_model("m", CONFIG) == "unchanged"
    X, y = rows(3, seed=4)
    old, _ = await b.predict("m", X)
    assert await a.put_model("m", CONFIG, replace=True) == "replaced"
    [result] = await b.feedback([LabelItem.read(old[0].prediction_id, y[0])])  # the append script refuses it
    assert isinstance(result.error, ModelGone)
    assert await until(lambda: b.replicas["m"].generation == 2) < 1.0
    await a.delete_model("m")
    assert await until(lambda: "m" not in b.replicas) < 1.0
    with pytest.raises(UnknownModel):
        await b.predict("m", X)
    [result] = await b.feedback([LabelItem.read(old[1].prediction_id, y[1])])
    assert isinstance(result.error, ModelGone) and "deleted" in result.error.problem


async def test_a_retry_answers_the_first_outcome_and_another_value_is_a_conflict(replicas: Replicas) -> None:
    a, b = await replicas.start(), await replicas.start()
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    X, y = rows(2, seed=5)
    predictions, _ = await a.predict("m", X)
    pid = predictions[0].prediction_id
    [first] = await a.feedback([LabelItem.read(pid, y[0])])
    [again] = await b.feedback([LabelItem.read(pid, y[0])])  # a retry, through the other replica
    assert again.duplicate and again.applied and again.error is None
    assert (again.model_version, again.delay_seconds) == (first.model_version, first.delay_seconds)
    [changed] = await b.feedback([LabelItem.read(pid, -y[0])])
    assert isinstance(changed.error, LabelConflict)
    await until(lambda: b.replicas["m"].runtime.version == 1)
    assert a.view("m").version == b.view("m").version == 1


async def test_a_store_that_lost_its_data_is_refused(replicas: Replicas, redis_client: redis.Redis) -> None:
    a = await replicas.start()
    await a.put_model("m", CONFIG)
    X, y = rows(5, seed=6)
    await label(a, "m", X, y)
    redis_client.flushdb()  # a Redis restarted without persistence
    await a.check_identity()
    with pytest.raises(StoreLost):
        await a.predict("m", X)
    with pytest.raises(StoreLost):
        await a.feedback([LabelItem.read("m:1:1a2b3c4d5e6-0123456789abcdef", 1)])
    for change in (a.put_model("new", CONFIG), a.put_model("m", CONFIG, replace=True), a.delete_model("m")):
        with pytest.raises(StoreLost) as refused:
            await change
        assert refused.value.retry_after_seconds is not None  # clients are told when to try again
    await a.stop()
    assert redis_client.keys("*") == []  # no model change, lease or shutdown checkpoint wrote a key


async def test_replicas_rebuild_when_the_store_loses_its_newest_entries(
    replicas: Replicas, redis_client: redis.Redis
) -> None:
    """A failover (or a Redis restart after an unsynced write) can lose the newest entries, and the
    store then numbers new ones from where it is. Replicas that applied the lost entries find
    another entry at a position they applied, and rebuild from a checkpoint before it: they end in
    the state of the log as it now is."""
    a, b = await replicas.start(), await replicas.start()
    await a.put_model("m", CONFIG)
    await until(lambda: "m" in b.replicas)
    X, y = rows(60, seed=7)
    await label(a, "m", X[:30], y[:30])
    assert (await a.checkpoint("m"))[0]
    await label(a, "m", X[30:50], y[30:50])
    await until(lambda: b.replicas["m"].runtime.version == 50)
    log_key, seq_key = "acog:{m}:1:log", "acog:{m}:1:seq"
    lost = [entry_id for entry_id, _ in redis_client.xrange(log_key)][-10:]  # entries 41..50 are lost
    redis_client.xdel(log_key, *lost)
    redis_client.set(seq_key, 40)
    await label(a, "m", X[50:60], y[50:60])  # numbered 41..50 again: other entries
    for engine in (a, b):  # each rebuilt once (from the checkpoint at 30), then replayed to 50
        await until(lambda e=engine: e.replicas["m"].resyncs == 1 and e.replicas["m"].runtime.version == 50)
    survivors = X[:40] + X[50:60], y[:40] + y[50:60]
    expected = reference(*survivors).weights()  # type: ignore[attr-defined]
    assert np.array_equal(weights(a, "m"), expected) and np.array_equal(weights(b, "m"), expected)


async def test_the_label_path_never_installs_a_model_and_asks_the_follower_to(replicas: Replicas) -> None:
    """A label for a model this replica does not hold yet (its control event not read yet) is
    answered ``model_unavailable`` with a short retry advice, without loading the model on the
    request's path; the control follower loads it, and the retried label is applied."""
    a, b = await replicas.start(), await replicas.start()
    control = b.lifecycle.tasks[0]
    await finish(control, 3.0, cancel_first=True)  # b hears of no model change for now
    await a.put_model("m", CONFIG)
    X, y = rows(1, seed=8)
    [prediction], _ = await a.predict("m", X)
    item = LabelItem.read(prediction.prediction_id, y[0])
    [early] = await b.feedback([item])
    assert isinstance(early.error, ModelUnavailable) and early.error.retry_after_seconds == 1
    assert "m" not in b.replicas
    position = "0-0"
    b.lifecycle.tasks[0] = asyncio.create_task(
        b.registry.follow_control(position, lambda: b.lifecycle.stopping)
    )
    assert await until(lambda: "m" in b.replicas) < 2.0
    [late] = await b.feedback([item])
    assert late.applied and late.error is None


async def test_a_label_for_a_malformed_id_is_unknown_and_the_id_is_read_once() -> None:
    item = LabelItem.read("not-an-id", 1)
    assert item.pid is None and item.model is None and item.text == "not-an-id"
    pid = "m:3:1a2b3c4d5e6-0123456789abcdef"
    read = LabelItem.read(pid, 1)
    assert read.pid is not None and (read.model, read.pid.generation, str(read.pid)) == ("m", 3, pid)
