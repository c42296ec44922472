"""asyncapi.yaml is generated from the WebSocket's message models (`acog export-asyncapi`); it must
not drift, its examples must fit its schemas, and a real service's replies must fit them too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml
from websockets.sync.client import connect

from service.cli import export_document

from .support.private_redis import PrivateRedis
from .support.service_process import ServiceProcess

ROOT = Path(__file__).resolve().parents[1]
export = partial(export_document, "asyncapi")  # what `acog export-asyncapi` writes
DOCUMENT: dict[str, Any] = yaml.safe_load(export())


def validator(schema_name: str) -> Any:
    schema = {"$ref": f"#/components/schemas/{schema_name}", "components": DOCUMENT["components"]}
    return jsonschema_rs.validator_for(schema)


def test_checked_in_asyncapi_matches_the_models() -> None:
    checked_in = (ROOT / "asyncapi.yaml").read_text()
    assert yaml.safe_load(checked_in) == DOCUMENT, (
        "asyncapi.yaml is out of date: run `acog export-asyncapi` and commit the result"
    )


@pytest.mark.parametrize("name", sorted(DOCUMENT["components"]["messages"]))
def test_every_example_fits_its_schema(name: str) -> None:
    message = DOCUMENT["components"]["messages"][name]
    schema = message["payload"]["$ref"].rsplit("/", 1)[1]
    for example in message["examples"]:
        validator(schema).validate(example["payload"])


@pytest.fixture(scope="module")
def ws_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("asyncapi")
    redis_server = PrivateRedis(directory)
    redis_server.start()
    env = {"ACOG_REDIS_URL": redis_server.url, "ACOG_DEFAULT_MODEL": '{"name": "m", "n_features": 3}'}
    service = ServiceProcess(directory, env)
    try:
        service.start()
        yield service.ws_url
    finally:
        service.kill()
        redis_server.close()


def test_a_real_services_replies_fit_the_document(ws_url: str) -> None:
    replies: dict[str, list[Any]] = {"PredictReply": [], "FeedbackReply": [], "ErrorReply": []}
    with connect(ws_url) as socket:

        def send(message: dict[str, Any] | str) -> dict[str, Any]:
            socket.send(message if isinstance(message, str) else json.dumps(message))
            reply: dict[str, Any] = json.loads(socket.recv(timeout=30))
            return reply

        one = send({"type": "predict", "id": "a", "model": "m", "features": [1.0, 0.0, 2.0]})
        batch = send({"type": "predict", "id": 2, "model": "m", "instances": [[1, 2, 3], {"indices": [1],
                      "values": [0.5]}]})  # fmt: skip
        replies["PredictReply"] += [one, batch]
        pid = one["result"]["prediction_id"]
        replies["FeedbackReply"] += [
            send({"type": "feedback", "id": [3], "prediction_id": pid, "label": 1}),
            send({"type": "feedback", "id": None, "items": [{"prediction_id": p["prediction_id"], "label": -1}
                  for p in batch["result"]["predictions"]]}),
            send({"type": "feedback", "model": "m", "features": [0.0, 1.0, 0.0], "label": -1}),
        ]  # fmt: skip
        replies["ErrorReply"] += [
            send("not JSON"),
            send({"type": "explode", "id": 4}),
            send({"type": "predict", "id": 5, "model": "m", "features": [1.0]}),
            send({"type": "feedback", "id": 6, "prediction_id": "nope", "label": 1}),
        ]
    for schema, answers in replies.items():
        for answer in answers:
            validator(schema).validate(answer)
    assert [r["status"] for r in replies["ErrorReply"]] == [422, 422, 422, 404]
