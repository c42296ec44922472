"""Every limit is a setting, answered with 413 or 422 and a message naming it; nothing that a
client sends is ever loaded as code, pickle or a file path.

One service with tiny limits, on the embedded store (so that the test can also check that
hostile model and feature names never create a file in its data directory).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from ..e2e.client import Running, assert_refused
from .conftest import ADMIN_KEYS, CONFIG, KEYED_ENV, PROBE, N, authorised, bearer, snapshot, start, train

ROOT = Path(__file__).resolve().parents[2]
MAX_BODY = 4096
MAX_BATCH = 4
MAX_N_FEATURES = 64
MAX_MODELS = 5
MAX_PENDING = 6
WS_MAX_BYTES = 1024
WS_RATE = 5
MAX_FEATURE_VALUE = 1000.0
LIMITS = {
    "ACOG_MAX_BODY_BYTES": str(MAX_BODY),
    "ACOG_MAX_BATCH": str(MAX_BATCH),
    "ACOG_MAX_N_FEATURES": str(MAX_N_FEATURES),
    "ACOG_MAX_MODELS": str(MAX_MODELS),
    "ACOG_WS_MAX_MESSAGE_BYTES": str(WS_MAX_BYTES),
    "ACOG_WS_MAX_MESSAGES_PER_SECOND": str(WS_RATE),
    "ACOG_MAX_FEATURE_VALUE": str(MAX_FEATURE_VALUE),
    "ACOG_MAINTENANCE_INTERVAL_SECONDS": "0.2",
    "ACOG_WS_COMPRESSION": "true",
}
ROW = PROBE[0]


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with start(tmp_path_factory, "limits", {**KEYED_ENV, **LIMITS}) as run:
        authorised(run.api, ADMIN_KEYS[0])
        run.api.probe_batch = MAX_BATCH
        train(run.api, "base")
        yield run


def data_files(run: Running) -> set[str]:
    return {str(p.relative_to(run.service.directory)) for p in run.service.directory.rglob("*")}


def test_body_bytes(limited: Running) -> None:
    before = snapshot(limited.api, "base")
    body = json.dumps({"model": "base", "features": ROW})
    body = body[:-1] + " " * (MAX_BODY + 1 - len(body)) + "}"
    assert_refused(limited.api.post_text("/predict", body), 413, "body", f"larger than {MAX_BODY} bytes")
    assert_refused(limited.api.post_text("/feedback", body), 413, "body", f"larger than {MAX_BODY} bytes")
    put = limited.api.http.put("/models/base", content=body, headers={"content-type": "application/json"})
    assert_refused(put, 413, "body", f"larger than {MAX_BODY} bytes")
    assert snapshot(limited.api, "base") == before


def test_batch_size(limited: Running) -> None:
    api = limited.api
    before = snapshot(api, "base")
    over = MAX_BATCH + 1
    response = api.http.post("/predict", json={"model": "base", "instances": [ROW] * over})
    assert_refused(response, 413, "instances", f"over the limit of {MAX_BATCH} (max_batch)")
    labels = {"items": [{"prediction_id": f"base:1:1-{i:016x}", "label": 1} for i in range(over)]}
    assert_refused(api.http.post("/feedback", json=labels), 413, "items", f"over the limit of {MAX_BATCH}")
    examples = {"model": "base", "items": [{"features": ROW, "label": 1}] * over}
    assert_refused(api.http.post("/feedback", json=examples), 413, "items", "(max_batch)")
    assert snapshot(api, "base") == before
    assert len(api.predict("base", [ROW] * MAX_BATCH)) == MAX_BATCH  # the limit itself is allowed


@pytest.mark.parametrize(
    "config,field",
    [
        ({"n_features": MAX_N_FEATURES + 1}, "n_features"),
        ({"max_features": MAX_N_FEATURES + 1}, "max_features"),
        ({"feature_names": [f"f{i}" for i in range(MAX_N_FEATURES + 1)]}, "max_features"),
    ],
)
def test_n_features_and_max_features(limited: Running, config: dict[str, Any], field: str) -> None:
    response = limited.api.http.put("/models/too-wide", json=config)
    assert_refused(response, 422, field, f"{MAX_N_FEATURES + 1} is over the limit of {MAX_N_FEATURES}")
    assert "(max_n_features)" in response.text
    assert limited.api.http.get("/models/too-wide").status_code == 404
    limited.api.put_model("wide-enough", {"n_features": MAX_N_FEATURES})
    limited.api.delete_model("wide-enough")


def test_named_features_beyond_max_features_are_refused(limited: Running) -> None:
    api = limited.api
    api.put_model("named", {"max_features": 3})
    response = api.http.post(
        "/predict", json={"model": "named", "features": {"a": 1, "b": 2, "c": 3, "d": 4}}
    )
    assert_refused(response, 422, "features", "more than max_features = 3")
    api.delete_model("named")


def test_number_of_models(limited: Running) -> None:
    api = limited.api
    existing = [m["name"] for m in api.http.get("/models").json()["models"]]
    extra = [f"extra-{i}" for i in range(MAX_MODELS - len(existing))]
    for name in extra:
        api.put_model(name, CONFIG)
    response = api.http.put("/models/one-too-many", json=CONFIG)
    assert_refused(response, 422, "name", f"maximum of {MAX_MODELS} models (max_models)")
    assert response.json()["detail"][0]["loc"][0] == "path"
    api.put_model(extra[-1], CONFIG, expect=200, replace=True)  # replacing one is not adding one
    api.delete_model(extra[-1])
    api.put_model("one-too-many", CONFIG)  # room again
    for name in [*extra[:-1], "one-too-many"]:
        api.delete_model(name)


def test_pending_predictions_per_model(tmp_path_factory: pytest.TempPathFactory) -> None:
    """On a service of its own: the probe predictions of the other tests would fill the limit."""
    env = {**KEYED_ENV, "ACOG_MAX_PENDING_PER_MODEL": str(MAX_PENDING)}
    with start(tmp_path_factory, "pending", env) as run:
        api = authorised(run.api, ADMIN_KEYS[0])
        api.put_model("pending", CONFIG)
        first = api.predict("pending", [ROW] * 4)
        api.predict("pending", [ROW] * 2)
        before = api.state("pending")
        response = api.http.post("/predict", json={"model": "pending", "features": ROW})
        assert_refused(
            response, 422, "instances", f"exceed the limit of {MAX_PENDING} (max_pending_per_model)"
        )
        response = api.http.post("/predict", json={"model": "pending", "instances": [ROW] * 3})
        assert_refused(response, 422, "instances", "(max_pending_per_model)")
        assert api.state("pending") == before
        api.label(first[0]["prediction_id"], 1)  # a labelled prediction is no longer pending
        assert api.predict_one("pending", ROW)["stored"] is True


def test_feature_values_of_an_unnormalised_model(limited: Running) -> None:
    api = limited.api
    train(api, "raw", config={**CONFIG, "normalize": "none"})
    before = snapshot(api, "raw")
    huge = [1e308] * N
    for path, body in [
        ("/predict", {"model": "raw", "features": huge}),
        ("/predict", {"model": "raw", "features": {"indices": [0], "values": [-MAX_FEATURE_VALUE * 2]}}),
        ("/feedback", {"model": "raw", "features": huge, "label": 1}),
        (
            "/feedback",
            {"model": "raw", "items": [{"features": ROW, "label": 1}, {"features": huge, "label": 1}]},
        ),
    ]:
        response = api.http.post(path, json=body)
        assert_refused(response, 422, "features", f"over {MAX_FEATURE_VALUE:g} (max_feature_value)")
    assert snapshot(api, "raw") == before
    assert api.predict_one("raw", [MAX_FEATURE_VALUE] * N)["stored"]  # the bound itself is allowed
    # an L2-normalised model takes any finite value, and stays finite
    api.put_model("unit", {**CONFIG, "normalize": "l2"})
    for _ in range(3):
        api.learn("unit", [huge, [-1e300] * N], [1, -1])
    assert all(math.isfinite(p["score"]) for p in api.predict("unit", [huge, ROW]))
    api.delete_model("raw")
    api.delete_model("unit")


def ws_send(limited: Running, messages: list[str]) -> list[dict[str, Any]]:
    with connect(limited.service.ws_url, additional_headers=bearer(ADMIN_KEYS[0]), max_size=None) as ws:
        for text in messages:
            ws.send(text)
        return [json.loads(ws.recv(timeout=30)) for _ in messages]


def test_websocket_message_size(limited: Running) -> None:
    before = snapshot(limited.api, "base")
    good = {"type": "predict", "model": "base", "features": ROW}
    padded = json.dumps({**good, "id": 1, "pad": "x" * WS_MAX_BYTES})
    exact = json.dumps({**good, "id": 2})
    exact = exact[:-1] + " " * (WS_MAX_BYTES - len(exact)) + "}"
    assert len(exact.encode()) == WS_MAX_BYTES
    too_big, fine = ws_send(limited, [padded, exact])
    assert too_big["status"] == 413 and f"larger than {WS_MAX_BYTES} bytes" in too_big["detail"][0]["msg"]
    assert fine["ok"], fine
    # a frame over 4 x the limit is never read: uvicorn closes the socket with 1009 (message too big)
    with connect(limited.service.ws_url, additional_headers=bearer(ADMIN_KEYS[0]), max_size=None) as ws:
        ws.send("x" * (4 * WS_MAX_BYTES + 1))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert snapshot(limited.api, "base") == before


def test_websocket_compression_when_asked_for(limited: Running) -> None:
    """With ``ACOG_WS_COMPRESSION=true`` the service accepts the client's permessage-deflate offer,
    and the size limit applies to the inflated message."""
    with connect(limited.service.ws_url, additional_headers=bearer(ADMIN_KEYS[0])) as ws:
        assert "permessage-deflate" in (ws.response.headers.get("Sec-WebSocket-Extensions") or "")
    (too_big,) = ws_send(limited, [json.dumps({"type": "predict", "id": 1, "model": "base",
                                               "features": ROW, "pad": " " * WS_MAX_BYTES})])  # fmt: skip
    assert too_big["status"] == 413, too_big


def test_websocket_rate(limited: Running) -> None:
    time.sleep(1.1)  # a full bucket
    before = snapshot(limited.api, "base")
    messages = [json.dumps({"type": "predict", "id": i, "model": "base", "features": ROW}) for i in range(12)]
    replies = ws_send(limited, messages)
    statuses = [r["status"] for r in replies]
    # one reply each, in order, naming its message; a refused one is not handled
    assert [(r["id"], r["type"]) for r in replies] == [(i, "predict") for i in range(12)]
    assert statuses[:WS_RATE] == [200] * WS_RATE and statuses.count(429) >= 12 - WS_RATE - 1, statuses
    refused = next(r for r in replies if r["status"] == 429)
    assert f"more than {WS_RATE} messages a second" in refused["detail"][0]["msg"]
    assert refused["retry_after"] >= 1  # seconds until the bucket holds a message again
    assert snapshot(limited.api, "base") == before


HOSTILE_NAMES = ["..", "../etc", "..%2F..%2Fetc", "a/b", "a\\b", "a\x00b", "%00", "/etc/passwd", ".hidden",
                 "-dash", "名前", "a" * 65, "x:y", "{x}", "a b", "~root", "C:\\x"]  # fmt: skip


def test_hostile_model_names_are_refused_and_touch_no_file(limited: Running) -> None:
    files = data_files(limited)
    before = snapshot(limited.api, "base")
    for name in HOSTILE_NAMES:
        quoted = name.replace("%", "%25").replace("/", "%2F").replace("\\", "%5C").replace("\x00", "%00")
        for method, body in [("PUT", CONFIG), ("GET", None), ("DELETE", None)]:
            response = limited.api.http.request(method, f"/models/{quoted}", json=body)
            assert response.status_code in (404, 405, 422), (name, method, response.text)
        predicted = limited.api.http.post("/predict", json={"model": name, "features": ROW})
        assert predicted.status_code == 422, (name, predicted.text)
        label = limited.api.http.post(
            "/feedback", json={"prediction_id": f"{name}:1:1-0123456789abcdef", "label": 1}
        )
        assert label.status_code == 404, (name, label.text)
    assert [m["name"] for m in limited.api.http.get("/models").json()["models"]] == ["base"]
    assert snapshot(limited.api, "base") == before
    assert data_files(limited) == files


def test_hostile_feature_names_are_only_names(limited: Running) -> None:
    api = limited.api
    files = data_files(limited)
    names = [
        "../../etc/passwd",
        "/dev/null",
        "a\x00b",
        "__import__('os')",
        "${HOME}",
        "名前",
        "🙂",
        "x" * 256,
    ]
    api.put_model("names", {"max_features": 16})
    response = api.http.post(
        "/feedback", json={"model": "names", "features": dict.fromkeys(names, 1.0), "label": 1}
    )
    assert response.status_code == 200 and response.json()["applied"], response.text
    assert api.model("names")["state"]["features_registered"] == len(names)
    too_long = api.http.post("/predict", json={"model": "names", "features": {"y" * 257: 1.0}})
    assert too_long.status_code == 422, too_long.text
    assert data_files(limited) == files
    api.delete_model("names")


# importlib.resources.files is allowed: service/api/docs.py finds the Swagger UI assets of an
# installed wheel with it (package data, read-only; no code is imported and no client names a path).
FORBIDDEN = re.compile(
    r"\bimport pickle\b|\bpickle\.|\bmarshal\b|\bdill\b|\bcloudpickle\b|\bjoblib\b"
    r"|(?<![\w.])eval\(|(?<![\w.])exec\(|__import__|importlib(?!\.resources import files$)"
    r"|yaml\.load\(|yaml\.unsafe_load"
    r"|allow_pickle\s*=\s*True|\bshelve\b|\bsubprocess\b"
)
SOURCES = ["service/api", "service/engine", "model_store", "service/learners", "service/features.py",
           "service/settings.py", "service/model_config.py"]  # fmt: skip


def test_no_code_pickle_or_paths_from_clients_in_the_source() -> None:
    """Nothing that handles requests or stored bytes can deserialise code: no pickle, marshal,
    eval/exec, dynamic imports or unsafe YAML in the service, the engine or the store; and the
    only filesystem path the service opens is ``ACOG_DATA_DIR``, from its settings."""
    found = []
    for package in SOURCES:
        for path in sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else [ROOT / package]:
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if FORBIDDEN.search(line.split("#", 1)[0]):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
    opened = []
    for package in ("service/api", "service/engine"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text()
            found_here = re.findall(r"\bopen\(|pathlib|os\.path|read_bytes|read_text|shutil", text)
            opened += [f"{path.name}: {m}" for m in found_here]
    assert not opened, opened
