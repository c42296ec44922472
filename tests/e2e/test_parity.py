"""Batch and WebSocket parity with single REST calls, and the WebSocket's error replies.

- ``instances`` of N answers exactly what N single ``/predict`` calls answer on a fresh
  identical model, all along a stream that keeps both models learning the same labels.
- The same stream through the WebSocket (pipelined predict and feedback messages) ends in
  the same model as through REST: version, measures, counts and probe scores.
- WebSocket replies come back in the order of the messages, each with the client's ``id``;
  a malformed message gets an error reply with a status, and the socket stays open.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from service.client import Prediction
from service.measures import Measures, Objective
from service.model_config import ModelConfig

from ..support.model_state import answer, comparable, learn, scores, served, snapshot, state
from ..support.private_redis import PrivateRedis
from .client import Running, running
from .conftest import N_FEATURES, German

CONFIG = {"n_features": N_FEATURES}  # the defaults: acog, eta auto, intercept, Laplace rho
CHUNK = 30
N_EXAMPLES = 300


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, module_redis: PrivateRedis) -> Iterator[Running]:
    with running(tmp_path_factory.mktemp("parity"), {"ACOG_REDIS_URL": module_redis.url}) as run:
        yield run


@pytest.fixture
def ws(server: Running) -> Iterator[ClientConnection]:
    with connect(server.service.ws_url, open_timeout=10, max_size=2**22) as socket:
        yield socket


def exchange(socket: ClientConnection, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send every message first (pipelined), then read one reply per message, in order."""
    for message in messages:
        socket.send(json.dumps(message))
    replies = [json.loads(socket.recv(timeout=30)) for _ in messages]
    assert [r["id"] for r in replies] == [m["id"] for m in messages], "replies out of order or ids lost"
    assert [r["type"] for r in replies] == [m["type"] for m in messages]
    return replies


def test_the_websocket_does_not_compress_by_default(ws: ClientConnection) -> None:
    """A client offering permessage-deflate (the websockets client does) gets plain frames: the
    handshake's reply names no extension (``ACOG_WS_COMPRESSION`` is off)."""
    assert "permessage-deflate" in (ws.request.headers.get("Sec-WebSocket-Extensions") or "")
    assert ws.response.headers.get("Sec-WebSocket-Extensions") is None


def test_a_batch_answers_what_single_calls_answer(server: Running, german: German) -> None:
    client = server.client
    client.put_model("batch", CONFIG)
    client.put_model("single", CONFIG)
    rng = random.Random(11)
    for start in range(0, N_EXAMPLES, CHUNK):
        rows = german.rows[start : start + CHUNK]
        batch = client.predict_batch(rows, model="batch")
        single = [client.predict(row, model="single") for row in rows]
        assert [answer(p) for p in batch] == [answer(p) for p in single]
        assert len({b.prediction_id for b in batch}) == len(batch)
        # label both in the same shuffled order, so that the next chunk is scored by a model that moved
        order = rng.sample(range(len(rows)), len(rows))
        for replies in (batch, single):
            results = client.feedback_batch([(replies[i], german.y[start + i]) for i in order])
            assert [r.model_version for r in results] == list(range(start + 1, start + len(rows) + 1))
    batch_state, single_state = state(client, "batch"), state(client, "single")
    assert batch_state["version"] == N_EXAMPLES
    assert comparable(batch_state) == comparable(single_state)
    assert scores(client, "batch", german.probe) == scores(client, "single", german.probe)


def test_the_websocket_ends_in_the_model_rest_builds(
    server: Running, ws: ClientConnection, german: German
) -> None:
    client = server.client
    client.put_model("over-ws", CONFIG)
    client.put_model("over-rest", CONFIG)
    rng = random.Random(12)
    for start in range(0, N_EXAMPLES, CHUNK):
        rows = german.rows[start : start + CHUNK]
        # predictions: one batch message, then one message per remaining row, all pipelined
        split = rng.randrange(1, CHUNK)
        messages: list[dict[str, Any]] = [
            {"type": "predict", "id": f"batch-{start}", "model": "over-ws", "instances": rows[:split]}
        ]
        messages += [
            {"type": "predict", "id": start + i, "model": "over-ws", "features": rows[i]}
            for i in range(split, len(rows))
        ]
        replies = exchange(ws, messages)
        assert all(r["ok"] and r["status"] == 200 for r in replies), replies
        over_ws = [Prediction.model_validate(p) for p in replies[0]["result"]["predictions"]]
        over_ws += [Prediction.model_validate(r["result"]) for r in replies[1:]]
        over_rest = client.predict_batch(rows[:split], model="over-rest")
        over_rest += [client.predict(row, model="over-rest") for row in rows[split:]]
        assert [answer(p) for p in over_ws] == [answer(p) for p in over_rest]

        # labels: shuffled, in batches and alone, pipelined; REST then applies them in the
        # order the WebSocket's model applied them (the model_version each answer carries)
        order = rng.sample(range(len(rows)), len(rows))
        messages, parts = [], []
        while order:
            size = rng.choice([1, 1, 3, 5])
            part, order = order[:size], order[size:]
            items = [{"prediction_id": over_ws[i].prediction_id, "label": german.y[start + i]}
                     for i in part]  # fmt: skip
            body = items[0] if size == 1 else {"items": items}
            messages.append({"type": "feedback", "id": f"fb-{start}-{len(messages)}", **body})
            parts.append(part)
        replies = exchange(ws, messages)
        applied: list[tuple[int, int]] = []  # (version, row in chunk)
        for part, reply in zip(parts, replies, strict=True):
            assert reply["ok"] and reply["status"] == 200, reply
            results = reply["result"]["results"] if "results" in reply["result"] else [reply["result"]]
            assert [r["prediction_id"] for r in results] == [over_ws[i].prediction_id for i in part]
            assert all(r["applied"] and not r["duplicate"] for r in results), results
            applied += [(r["model_version"], i) for r, i in zip(results, part, strict=True)]
        assert sorted(v for v, _ in applied) == list(range(start + 1, start + len(rows) + 1))
        for version, i in sorted(applied):
            assert client.feedback(over_rest[i], german.y[start + i]).model_version == version

    ws_state, rest_state = state(client, "over-ws"), state(client, "over-rest")
    assert ws_state["version"] == rest_state["version"] == N_EXAMPLES
    assert ws_state["measures"] == rest_state["measures"]
    assert comparable(ws_state) == comparable(rest_state)
    assert scores(client, "over-ws", german.probe) == scores(client, "over-rest", german.probe)


def test_a_malformed_message_gets_an_error_reply_and_the_socket_stays_open(
    server: Running, ws: ClientConnection, german: German
) -> None:
    server.client.put_model("ws-errors", CONFIG)
    before = snapshot(server.client, "ws-errors", german.probe)
    row = german.rows[0]
    good = {"type": "predict", "model": "ws-errors", "features": row}
    nan_row = json.dumps(row).replace(str(row[3]), "NaN", 1)
    nan_message = f'{{"type": "predict", "id": 7, "model": "ws-errors", "features": {nan_row}}}'
    label = {"type": "feedback", "prediction_id": "nope", "label": 1}
    cases: list[tuple[str, int, str, str]] = [  # (raw text, status, a loc part, a word of the message)
        ("this is not JSON", 422, "message", "not valid JSON"),
        ("[1, 2, 3]", 422, "message", "JSON object"),
        (json.dumps({"type": "explode", "id": 1}), 422, "type", "must be"),
        (json.dumps({"id": 2, "model": "ws-errors", "features": row}), 422, "type", "must be"),
        (json.dumps({**good, "id": 3, "features": row[:-1]}), 422, "features", "length 23"),
        (json.dumps({**good, "id": 4, "features": "abc"}), 422, "features", "a list of numbers"),
        (json.dumps({**good, "id": 5, "colour": "red"}), 422, "colour", "extra"),
        (json.dumps({**good, "id": 6, "model": "absent"}), 404, "model", "no model named"),
        (nan_message, 422, "features", "finite"),
        (json.dumps({**label, "id": 8}), 404, "prediction_id", "'nope' is not a prediction id"),
        (json.dumps({**label, "id": 9, "label": "1"}), 422, "label", "valid"),
        (json.dumps({**good, "id": 10, "pad": "x" * (2**20 + 1)}), 413, "message", "larger than"),
    ]  # fmt: skip
    for text, status, field, problem in cases:
        ws.send(text)
        error = json.loads(ws.recv(timeout=30))
        assert error["ok"] is False and error["status"] == status, (text[:200], error)
        named = [d for d in error["detail"] if field in [str(p) for p in d["loc"]]]
        assert named and any(problem.lower() in d["msg"].lower() for d in named), (text[:200], error)
        if text.startswith("{") and status != 413:
            assert error["id"] == json.loads(text).get("id"), error
        # the socket is still open and serving
        ws.send(json.dumps({**good, "id": "after"}))
        reply = json.loads(ws.recv(timeout=30))
        assert reply["ok"] and reply["id"] == "after", reply
    assert snapshot(server.client, "ws-errors", german.probe) == before


def test_dense_sparse_and_integer_inputs_score_alike(server: Running, german: German) -> None:
    """The same vector as a dense list, as sparse pairs (zeros or not), with integers for integral
    values, alone or mixed in one batch: the same score to the bit. (Unsorted indices are refused:
    tests/e2e/test_bad_inputs.py.)"""
    client = server.client
    client.put_model("forms", CONFIG)
    learn(client, "forms", german.rows[:60], german.y[:60])
    forms: list[list[Any]] = []
    for row in german.probe[:8] + german.rows[60:68]:
        nonzero = [(i, v) for i, v in enumerate(row) if v != 0.0]
        forms.append(
            [
                row,
                {"indices": [i for i, _ in nonzero], "values": [v for _, v in nonzero]},
                {"indices": list(range(N_FEATURES)), "values": row},  # zeros given explicitly
                [int(v) if float(v).is_integer() else v for v in row],
            ]
        )
    for same in forms:
        seen = {p.score for p in client.predict_batch(same, model="forms")}
        seen |= {client.predict(f, model="forms").score for f in same}
        assert len(seen) == 1, (same[0], seen)
    assert len({client.predict(same[0], model="forms").score for same in forms}) > 1


def test_examples_never_scored_are_learned_like_the_library(server: Running, german: German) -> None:
    """``/feedback`` with features (no prediction id): predicted and learned when applied."""
    client = server.client
    config = {"n_features": N_FEATURES, "algorithm": "acog", "eta": 10, "fit_intercept": False}
    client.put_model("examples", config)
    rng = random.Random(13)
    rows = list(range(120))
    applied: list[tuple[int, int]] = []  # (version, row)
    while rows:
        size = rng.choice([1, 1, 4, 8])
        part, rows = rows[:size], rows[size:]
        if size == 1:
            results = [client.learn(german.rows[part[0]], german.y[part[0]], model="examples")]
        else:
            results = client.learn_batch([(german.rows[i], german.y[i]) for i in part], model="examples")
        for i, result in zip(part, results, strict=True):
            assert result.applied and result.status == 200 and result.delay_seconds == 0.0, result
            assert result.prediction_id.startswith("examples:1:"), result
            assert result.model_version is not None
            applied.append((result.model_version, i))
    assert sorted(v for v, _ in applied) == list(range(1, 121))

    model = ModelConfig.model_validate(config)
    learner = model.build_learner()
    measures = Measures(Objective())
    for _, i in sorted(applied):
        x = german.served_row(model, i)
        measures.update(german.y[i], learner.predict(x))  # the prediction at apply time
        learner.learn(x, german.y[i])
    learned = state(client, "examples")
    expected = measures.summary()
    assert {k: learned["measures"][k] for k in expected} == expected
    assert scores(client, "examples", german.probe) == [learner.score(served(model, r)) for r in german.probe]
