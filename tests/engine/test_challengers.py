"""Challengers through the engine: put on one replica, held by both from the same label, shadow scores,
the limit, and a promotion whose state is bit for bit a fresh model of the challenger's configuration
given the labels after the put, on every replica and in a process started afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest
import redis

from service.engine import InvalidRequest, LabelItem, LimitExceeded, ModelGone, UnknownModel
from service.model_config import ModelConfig
from service.normalization import unit_l2

from .test_engine import CONFIG, D, Replicas, label, rows, until, weights

pytestmark = pytest.mark.anyio
CHALLENGER = ModelConfig.model_validate({"n_features": D, "algorithm": "arow"})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def replicas(redis_client: redis.Redis, redis_url: str) -> AsyncIterator[Replicas]:
    fleet = Replicas(redis_url)
    yield fleet
    await fleet.close()


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
