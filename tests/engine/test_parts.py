"""The engine's parts on the in-memory store (:class:`model_store.MemoryModelStore`): predictions,
labels and their outcomes, model changes, the label path for a model not held, a store that lost
its data. The same engine runs on Redis in ``test_engine.py`` and the process-level tests; here
nothing leaves the process, so each test is a few milliseconds of engine logic."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import numpy as np
import pytest

from model_store import MemoryModelStore
from service.engine import (
    Engine,
    EngineError,
    InvalidRequest,
    LabelConflict,
    LabelItem,
    LimitExceeded,
    ModelConflict,
    ModelGone,
    ModelUnavailable,
    StoreLost,
    TooLarge,
    UnknownModel,
    UnknownPrediction,
)
from service.engine.cancellation import finish
from service.model_config import ModelConfig
from service.normalization import unit_l2
from service.settings import Settings

from .test_engine import settings as engine_settings

pytestmark = pytest.mark.anyio

D = 4
CONFIG = ModelConfig.model_validate({"n_features": D, "eta": 1.0, "loss": "II"})


def settings(**overrides: object) -> Settings:
    return engine_settings(**{"redis_timeout_seconds": 0.2, "max_batch": 32, **overrides})


@pytest.fixture
async def store() -> MemoryModelStore:
    return MemoryModelStore()


@pytest.fixture
async def engine(store: MemoryModelStore) -> AsyncIterator[Engine]:
    started = Engine(store, settings())
    await started.start()
    await started.put_model("m", CONFIG)
    yield started
    await started.stop()


def rows(n: int, seed: int = 0) -> list[list[float]]:
    return np.random.default_rng(seed).normal(size=(n, D)).tolist()


async def test_labels_are_applied_in_order_and_give_the_learners_bits(engine: Engine) -> None:
    X = rows(20)
    y = [1 if x[0] > 0 else -1 for x in X]
    predictions, stored = await engine.predict("m", X)
    assert stored and len({p.prediction_id for p in predictions}) == 20
    results = await engine.feedback(
        [LabelItem.read(p.prediction_id, t) for p, t in zip(predictions, y, strict=True)]
    )
    assert [r.model_version for r in results] == list(range(1, 21))
    assert all(r.applied and r.error is None and not r.duplicate for r in results)
    learner = CONFIG.build_learner()
    for x, label in zip(X, y, strict=True):
        learner.learn(unit_l2(np.asarray(x)), label)
    assert np.array_equal(engine.replicas["m"].runtime.learner.weights(), learner.weights())


async def test_a_retry_is_a_duplicate_and_another_value_a_conflict(engine: Engine) -> None:
    [p], _ = await engine.predict("m", rows(1))
    [first] = await engine.feedback([LabelItem.read(p.prediction_id, 1)])
    [again] = await engine.feedback([LabelItem.read(p.prediction_id, 1)])
    [other] = await engine.feedback([LabelItem.read(p.prediction_id, -1)])
    assert again.duplicate and again.model_version == first.model_version == 1
    assert isinstance(other.error, LabelConflict) and other.error.field == "label"


async def test_ids_that_resolve_to_nothing_get_their_own_errors(
    engine: Engine, store: MemoryModelStore
) -> None:
    [p], _ = await engine.predict("m", rows(1))
    never = p.prediction_id[:-16] + "0" * 16
    other_model = "zz" + p.prediction_id[1:]
    results = await engine.feedback(
        [LabelItem.read(x, 1) for x in ("garbage", never, other_model, p.prediction_id)]
    )
    kinds = [type(r.error).__name__ if r.error else "applied" for r in results]
    assert kinds == ["UnknownPrediction", "UnknownPrediction", "UnknownPrediction", "applied"]
    assert [r.error.field for r in results[:3] if r.error] == [f"items[{i}].prediction_id" for i in range(3)]
    assert results[0].model is None and isinstance(results[0].error, UnknownPrediction)


async def test_an_invalid_label_refuses_the_whole_batch(engine: Engine) -> None:
    predictions, _ = await engine.predict("m", rows(2))
    with pytest.raises(InvalidRequest) as refused:
        await engine.feedback(
            [LabelItem.read(predictions[0].prediction_id, 1), LabelItem.read(predictions[1].prediction_id, 7)]
        )
    assert refused.value.field == "items[1].label"
    assert engine.view("m").version == 0


async def test_limits_are_refused_in_domain_terms(engine: Engine) -> None:
    with pytest.raises(TooLarge) as batch:
        await engine.predict("m", rows(33))
    assert isinstance(batch.value, LimitExceeded) and batch.value.kind == "limit_exceeded"
    with pytest.raises(UnknownModel):
        await engine.predict("nope", rows(1))
    for error in (batch.value, UnknownModel("model", "x")):
        assert not hasattr(error, "status")  # the API layer maps errors to HTTP statuses


async def test_model_changes_replace_and_delete(engine: Engine) -> None:
    [old], _ = await engine.predict("m", rows(1))
    assert await engine.put_model("m", CONFIG) == "unchanged"
    other = ModelConfig.model_validate({"n_features": D, "eta": 2.0, "loss": "II"})
    with pytest.raises(ModelConflict):
        await engine.put_model("m", other)
    assert await engine.put_model("m", other, replace=True) == "replaced"
    [gone] = await engine.feedback([LabelItem.read(old.prediction_id, 1)])
    assert isinstance(gone.error, ModelGone) and "replaced by generation 2" in gone.error.problem
    await engine.delete_model("m")
    [deleted] = await engine.feedback([LabelItem.read(old.prediction_id, 1)])
    assert isinstance(deleted.error, ModelGone) and "deleted" in deleted.error.problem
    with pytest.raises(UnknownModel):
        await engine.delete_model("m")


async def test_a_label_for_a_model_not_held_here_never_installs_it(
    engine: Engine, store: MemoryModelStore
) -> None:
    """Another engine on the same store creates a model this one has not heard of yet: its labels
    here are answered model_unavailable (retry in 1 s), and only the control follower loads it."""
    other = Engine(store, settings())
    await other.start()
    try:
        await finish(engine.lifecycle.tasks[0], 3.0, cancel_first=True)  # this engine hears nothing
        await other.put_model("n", CONFIG)
        [p], _ = await other.predict("n", rows(1))
        [early] = await engine.feedback([LabelItem.read(p.prediction_id, 1)])
        assert isinstance(early.error, ModelUnavailable) and early.error.retry_after_seconds == 1
        assert "n" not in engine.replicas
        follower = asyncio.create_task(
            engine.registry.follow_control("0-0", lambda: engine.lifecycle.stopping)
        )
        engine.lifecycle.tasks[0] = follower
        for _ in range(200):
            if "n" in engine.replicas:
                break
            await asyncio.sleep(0.01)
        [late] = await engine.feedback([LabelItem.read(p.prediction_id, 1)])
        assert late.applied and late.error is None
    finally:
        await other.stop()


async def test_a_store_that_lost_its_data_is_refused(engine: Engine, store: MemoryModelStore) -> None:
    [p], _ = await engine.predict("m", rows(1))
    store.wipe()
    await engine.check_identity()
    assert engine.store_lost is not None
    refusals: list[EngineError] = []
    for call in (engine.predict("m", rows(1)), engine.feedback([LabelItem.read(p.prediction_id, 1)])):
        with pytest.raises(StoreLost) as lost:
            await call
        refusals.append(lost.value)
    for change in (engine.put_model("new", CONFIG), engine.delete_model("m")):
        with pytest.raises(StoreLost) as lost:
            await change
        refusals.append(lost.value)
    assert all(e.retry_after is not None for e in refusals)  # clients are told when to try again


async def test_a_new_engine_recovers_every_model_from_the_store(
    engine: Engine, store: MemoryModelStore
) -> None:
    X = rows(10, seed=3)
    predictions, _ = await engine.predict("m", X)
    await engine.feedback(
        [LabelItem.read(p.prediction_id, 1 if i % 3 else -1) for i, p in enumerate(predictions)]
    )
    assert (await engine.checkpoint("m"))[0]
    fresh = Engine(store, settings())
    await fresh.start()
    try:
        assert fresh.view("m").version == 10
        assert np.array_equal(
            fresh.replicas["m"].runtime.learner.weights(), engine.replicas["m"].runtime.learner.weights()
        )
    finally:
        await fresh.stop()
