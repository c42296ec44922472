"""The client against a real service: batch and stream calls answer what single calls answer,
refusals raise exceptions naming the server's field and message, API keys, conflicts.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.client import (
    AsyncClient,
    Client,
    Forbidden,
    Gone,
    InvalidRequest,
    LabelConflict,
    NotFound,
    RetryEvent,
    RetryPolicy,
    Sparse,
    TooLarge,
    Unauthorized,
)

from ..support.model_state import answer, comparable
from .conftest import N_FEATURES, German, Served, serve

CONFIG = {"n_features": N_FEATURES}  # the service defaults
CHUNK = 30
N_EXAMPLES = 240


def test_batch_and_stream_calls_equal_single_calls(served: Served, german: German) -> None:
    """Three models fed the same labels in the same order: one through single REST calls, one
    through batches, one through the WebSocket (pipelined singles and batch messages). Every
    answer and the final models are equal, to the bit."""
    client = served.client
    for name in ("single", "batch", "stream"):
        client.put_model(name, CONFIG)
    rng = random.Random(5)
    with client.stream(window=16) as stream:
        for start in range(0, N_EXAMPLES, CHUNK):
            rows, labels = german.rows[start : start + CHUNK], german.y[start : start + CHUNK]
            single = [client.predict(row, model="single") for row in rows]
            batch = client.predict_batch(rows, model="batch")
            if (start // CHUNK) % 2:
                streamed = stream.predict_batch(rows, model="stream")
            else:
                streamed = stream.predict_many(rows, model="stream")
            assert [answer(p) for p in single] == [answer(p) for p in batch] == [answer(p) for p in streamed]
            assert len({p.prediction_id for p in streamed}) == len(rows)

            # labels, shuffled; pipelined over the WebSocket, each answer says where in the log
            # it landed, and the REST models get them in that same order
            order = rng.sample(range(len(rows)), len(rows))
            results = stream.feedback_many([(streamed[i], labels[i]) for i in order])
            assert all(r.applied and not r.duplicate and r.ok for r in results), results
            versions = [r.model_version for r in results]
            assert sorted(v for v in versions if v is not None) == list(range(start + 1, start + CHUNK + 1))
            applied = [i for _, i in sorted(zip(versions, order, strict=True))]  # type: ignore[type-var]
            for i in applied:
                assert client.feedback(single[i].prediction_id, labels[i]).applied
            batch_results = client.feedback_batch([(batch[i], labels[i]) for i in applied])
            assert [r.model_version for r in batch_results] == sorted(versions)  # type: ignore[type-var]

    states = {name: client.get_model(name).state for name in ("single", "batch", "stream")}
    assert states["single"] is not None and states["single"]["version"] == N_EXAMPLES
    assert comparable(states["single"]) == comparable(states["batch"]) == comparable(states["stream"])
    probe = {name: [p.score for p in client.predict_batch(german.probe, model=name)] for name in states}
    assert probe["single"] == probe["batch"] == probe["stream"]
    assert len(set(probe["single"])) > 1


def test_dense_sparse_numpy_and_named_inputs(served: Served, german: German) -> None:
    """The same vector in every form the client takes scores the same, to the bit."""
    import numpy as np
    import scipy.sparse as sp

    client = served.client
    client.put_model("forms", CONFIG)
    learned = client.predict_batch(german.rows[:40], model="forms")
    client.feedback_batch(list(zip(learned, german.y[:40], strict=True)))
    row = german.probe[0]
    nonzero = [(i, v) for i, v in enumerate(row) if v != 0.0]
    forms = [
        row,
        np.asarray(row),
        Sparse([i for i, _ in nonzero], [v for _, v in nonzero]),
        {"indices": [i for i, _ in nonzero], "values": [v for _, v in nonzero]},
        sp.csr_matrix(np.asarray([row])),
    ]
    scores = {client.predict(f, model="forms").score for f in forms}
    scores |= {p.score for p in client.predict_batch(forms, model="forms")}
    scores |= {p.score for p in client.predict_batch(np.asarray([row, row]), model="forms")}
    scores |= {p.score for p in client.predict_batch(sp.csr_matrix(np.asarray([row])), model="forms")}
    assert len(scores) == 1, scores

    client.put_model("named", {"feature_names": ["amount", "hour", "country_risk"]})
    p = client.predict({"amount": 120.0, "hour": 3.0, "country_risk": 0.7}, model="named")
    assert client.feedback(p, 1).applied
    assert (
        client.predict([120.0, 3.0, 0.7], model="named").score
        == client.predict({"amount": 120.0, "hour": 3.0, "country_risk": 0.7}, model="named").score
    )


def test_refusals_raise_exceptions_naming_the_field(served: Served, german: German) -> None:
    client = served.client
    client.put_model("refusals", CONFIG)
    nan_row = [*german.rows[0][:2], math.nan, *german.rows[0][3:]]
    with pytest.raises(InvalidRequest) as refused:
        client.predict(nan_row, model="refusals")
    assert (refused.value.status, refused.value.field) == (422, "features.dense.2")
    assert "finite" in refused.value.message
    with pytest.raises(InvalidRequest) as refused:
        client.predict(german.rows[0][:-1], model="refusals")
    assert refused.value.field == "features" and "length 23" in refused.value.message
    with pytest.raises(NotFound) as missing:
        client.predict(german.rows[0], model="absent")
    assert missing.value.field == "model" and "no model named" in missing.value.message
    with pytest.raises(NotFound) as unknown:
        client.feedback("refusals:1:0-0", 1)
    assert unknown.value.field == "prediction_id" and unknown.value.kind == "unknown"
    prediction = client.predict(german.rows[0], model="refusals")
    with pytest.raises(InvalidRequest) as bad_label:
        client.feedback(prediction, 3)
    assert bad_label.value.field == "label" and "-1 or +1" in bad_label.value.message

    with client.stream() as stream:  # the same refusals over the WebSocket
        with pytest.raises(InvalidRequest) as refused:
            stream.predict(nan_row, model="refusals")
        assert refused.value.field == "features.dense.2"
        with pytest.raises(NotFound) as missing:
            stream.predict(german.rows[0], model="absent")
        assert missing.value.field == "model"
        with pytest.raises(TooLarge) as too_large:  # answered without an id: matched by order
            stream.predict([0.123456789] * 100_000, model="refusals")  # 1.2 MB > 1 MiB
        assert too_large.value.status == 413 and "larger than" in too_large.value.message
        assert stream.predict(german.rows[0], model="refusals").model == "refusals"  # still open
        assert stream.connections == 1

    client.put_model("refusals", CONFIG, replace=True)  # a new generation: the old ids are gone
    with pytest.raises(Gone) as gone:
        client.feedback(prediction, 1)
    assert gone.value.status == 410 and gone.value.field == "prediction_id"
    assert client.get_model("refusals").version == 0


def test_a_conflicting_label_raises_and_is_never_retried(served: Served, german: German) -> None:
    events: list[RetryEvent] = []
    retry = RetryPolicy(attempts=5, on_retry=events.append)
    with Client(served.service.url, retry=retry) as client:
        client.put_model("conflicts", CONFIG)
        prediction = client.predict(german.rows[0], model="conflicts")
        first = client.feedback(prediction, 1)
        assert first.applied
        again = client.feedback(prediction, 1)  # the same label again: its first outcome
        assert again.duplicate and again.model_version == first.model_version
        with pytest.raises(LabelConflict) as conflict:
            client.feedback(prediction, -1)
        assert conflict.value.status == 409 and conflict.value.kind == "label_conflict"
        assert conflict.value.field in ("label", "prediction_id") and conflict.value.message
        assert not events
        assert client.get_model("conflicts").version == 1


def test_the_async_client_answers_like_the_sync_one(served: Served, german: German) -> None:
    client = served.client
    client.put_model("async-a", CONFIG)
    client.put_model("async-b", CONFIG)
    rows, labels = german.rows[:50], german.y[:50]

    async def run() -> list[float]:
        async with AsyncClient(served.service.url, model="async-a") as aclient:
            predictions = await asyncio.gather(*(aclient.predict(row) for row in rows))
            await aclient.feedback_batch(list(zip(predictions, labels, strict=True)))
            async with aclient.stream() as stream:
                batch = await stream.predict_batch(german.probe)
            return [p.score for p in batch]

    scores = asyncio.run(run())
    predictions = [client.predict(row, model="async-b") for row in rows]
    client.feedback_batch(list(zip(predictions, labels, strict=True)))
    assert scores == [p.score for p in client.predict_batch(german.probe, model="async-b")]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    env = {"ACOG_API_KEYS": "reader-key", "ACOG_ADMIN_KEYS": "admin-key"}
    with serve(tmp_path_factory.mktemp("keys"), env) as running:
        yield running


def test_api_keys(guarded: Served, german: German, tmp_path: Path) -> None:
    url = guarded.service.url
    with Client(url) as anonymous, pytest.raises(Unauthorized) as refused:
        anonymous.list_models()
    assert refused.value.field == "Authorization"
    with Client(url, api_key="reader-key") as reader, Client(url, api_key="admin-key") as admin:
        with pytest.raises(Forbidden) as forbidden:
            reader.put_model("keys", CONFIG)
        assert "admin key" in forbidden.value.message
        admin.put_model("keys", CONFIG)
        prediction = reader.predict(german.rows[0], model="keys")
        assert reader.feedback(prediction, german.y[0]).applied
        with reader.stream() as stream:
            assert stream.predict(german.rows[1], model="keys").model_version == 1
    wrong = Client(url, api_key="wrong")
    with pytest.raises(Unauthorized) as closed, wrong, wrong.stream() as stream:
        stream.predict(german.rows[1], model="keys")
    assert "API key" in closed.value.message
