"""Hostile input on a live server: hypothesis-generated bodies for /predict, /feedback, PUT
/models and WebSocket messages, plus the classics (deep JSON, 10^6-element vectors, duplicate
keys, empty bodies, wrong content types, invalid UTF-8).

Pass criteria: ZERO 5xx, and ZERO model changes from a refused request: before and after each
refused request the test compares every model's generation, state (version, counts, measures,
eta selection) and the scores of a fixed probe set. The budget is ``ACOG_FUZZ_EXAMPLES``
(see conftest.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.sync.client import ClientConnection, connect

from ..e2e.client import Running
from .conftest import (
    ADMIN_KEYS,
    CONFIG,
    KEYED_ENV,
    PROBE,
    N,
    authorised,
    bearer,
    fuzz_settings,
    snapshot,
    start,
    train,
)

NAMED = {"max_features": 16}
MODELS = {
    "fz": CONFIG,
    "fz-named": NAMED,
    "fz-raw": {**CONFIG, "normalize": "none", "label_format": "zero_one"},
}
NAMED_PROBE = [{"a": row[0], "b": row[1], "é": row[2]} for row in PROBE]
ENV = {**KEYED_ENV, "ACOG_MAX_N_FEATURES": "64", "ACOG_MAX_MODELS": "8"}


class Fuzzed:
    """The server, its model pool and the last accepted state of every model."""

    def __init__(self, run: Running) -> None:
        self.run = run
        self.api = run.api
        self.pids: list[str] = []
        self.state = self.everything()

    def everything(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in MODELS:
            out[name] = snapshot(self.api, name, NAMED_PROBE if name == "fz-named" else PROBE)
        response = self.api.http.get("/models/fz-cfg")  # any schema: no probe, its whole description
        out["fz-cfg"] = response.json() if response.status_code == 200 else None
        return out

    def send(
        self, method: str, path: str, content: bytes, content_type: str | None = "application/json"
    ) -> int:
        headers = {} if content_type is None else {"content-type": content_type}
        response = self.api.http.request(method, path, content=content, headers=headers)
        self.check(response.status_code, f"{method} {path} {content[:300]!r}: {response.text[:500]}")
        if response.status_code < 300:
            self.remember(response)
        return response.status_code

    def check(self, status: int, what: str) -> None:
        assert status < 500, what
        now = self.everything()
        if status >= 400:
            assert now == self.state, f"a refused request changed a model: {what}"
        self.state = now

    def remember(self, response: httpx.Response) -> None:
        with_ids = response.json() if response.headers.get("content-type") == "application/json" else {}
        if isinstance(with_ids, dict):
            for p in with_ids.get("predictions", [with_ids]):
                if isinstance(p, dict) and p.get("stored") and len(self.pids) < 200:
                    self.pids.append(p["prediction_id"])


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    with start(tmp_path_factory, "fuzz", ENV) as run:
        api = authorised(run.api, ADMIN_KEYS[0])
        train(api, "fz")
        api.put_model("fz-raw", MODELS["fz-raw"])
        api.put_model("fz-named", NAMED)
        for start_at in range(0, 24, 4):
            rows = [
                {"a": (i % 5) - 2.0, "b": (i % 3) - 1.0, "é": 0.5 * i} for i in range(start_at, start_at + 4)
            ]
            api.learn("fz-named", rows, [1 if r["a"] > 0 else -1 for r in rows])
        fuzzed = Fuzzed(run)
        fuzzed.pids = [p["prediction_id"] for p in api.predict("fz", PROBE * 3)]
        yield fuzzed


# --- strategies -------------------------------------------------------------------------------

NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([1e308, -1e308, 5e-324, 0.0, -0.0, 1e9, -1e9, 1e10, 2**63, -(2**63) - 1]),
)
TEXT = st.text(max_size=12) | st.sampled_from(["", "../../etc/passwd", "a\x00b", "名前", "🙂", "x" * 300])
SCALARS = st.none() | st.booleans() | NUMBERS | TEXT
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
DENSE = st.lists(NUMBERS, min_size=N, max_size=N) | st.lists(NUMBERS, max_size=12)
SPARSE = st.fixed_dictionaries(
    {
        "indices": st.lists(st.integers(min_value=-3, max_value=2**40) | JSON, max_size=6),
        "values": st.lists(NUMBERS | JSON, max_size=6),
    }
)
NAMED_FEATURES = st.dictionaries(TEXT | st.sampled_from(["a", "b", "é"]), NUMBERS | JSON, max_size=6)
FEATURES = DENSE | SPARSE | NAMED_FEATURES | JSON
MODEL_NAMES = st.sampled_from([*MODELS, "absent"]) | TEXT | JSON
LABELS = st.sampled_from([-1, 1, 0, 2, 1.0, -1.0, 0.5, True, "1", None, math.nan, math.inf, 10**30]) | JSON


def optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


PREDICT = optional(model=MODEL_NAMES, features=FEATURES, instances=st.lists(FEATURES, max_size=4) | JSON,
                   extra=JSON) | JSON  # fmt: skip


def feedback_bodies(pids: list[str]) -> st.SearchStrategy[Any]:
    pid = st.sampled_from(pids) | TEXT | JSON
    item = optional(prediction_id=pid, features=FEATURES, label=LABELS, model=JSON)
    return optional(prediction_id=pid, label=LABELS, model=MODEL_NAMES, features=FEATURES,
                    items=st.lists(item, max_size=4) | JSON) | JSON  # fmt: skip


POSITIVE = st.floats(min_value=1e-6, max_value=1e3) | NUMBERS | JSON
CONFIGS = optional(
    algorithm=st.sampled_from(["acog", "ssacog", "acog-diag", "perceptron", "arow", "cog", "nope"]) | JSON,
    n_features=st.integers(min_value=-2, max_value=70) | NUMBERS | JSON,
    max_features=st.integers(min_value=-2, max_value=70) | JSON,
    feature_names=st.lists(TEXT, max_size=6) | JSON,
    eta=st.just("auto") | POSITIVE,
    eta_grid=st.lists(POSITIVE, max_size=13) | JSON,
    gamma=POSITIVE, C=POSITIVE, r=POSITIVE, rho=st.just("auto") | POSITIVE,
    sketch_size=st.integers(min_value=-1, max_value=70) | JSON,
    alpha_p=NUMBERS | JSON, c_p=NUMBERS | JSON,
    loss=st.sampled_from(["I", "II", "III"]) | JSON, normalize=st.sampled_from(["l2", "none", "l1"]) | JSON,
    selection_window=st.integers(min_value=-1, max_value=200_000) | JSON,
    intercept_value=NUMBERS, fit_intercept=SCALARS, label_format=TEXT | st.just("zero_one"), extra=JSON,
) | JSON  # fmt: skip


def encode(body: Any) -> bytes:
    return json.dumps(body, allow_nan=True).encode()


# --- the fuzz tests -----------------------------------------------------------------------------


@fuzz_settings()
@given(body=PREDICT)
def test_predict_bodies(fuzzed: Fuzzed, body: Any) -> None:
    fuzzed.send("POST", "/predict", encode(body))


@fuzz_settings()
@given(data=st.data())
def test_feedback_bodies(fuzzed: Fuzzed, data: st.DataObject) -> None:
    fuzzed.send("POST", "/feedback", encode(data.draw(feedback_bodies(fuzzed.pids))))


@fuzz_settings()
@given(config=CONFIGS, name=st.sampled_from(["fz-cfg", "fz-cfg", "fz-cfg", "fz"]))
def test_model_configs(fuzzed: Fuzzed, config: Any, name: str) -> None:
    fuzzed.send("PUT", f"/models/{name}", encode(config))
    if name == "fz" and fuzzed.api.model("fz")["generation"] > 1:  # accepted: put the trained one back
        train(fuzzed.api, "fz")
        fuzzed.state = fuzzed.everything()


@pytest.fixture(scope="module")
def ws(fuzzed: Fuzzed) -> Iterator[ClientConnection]:
    with connect(
        fuzzed.run.service.ws_url, additional_headers=bearer(ADMIN_KEYS[0]), max_size=None
    ) as socket:
        yield socket


@fuzz_settings()
@given(data=st.data())
def test_websocket_messages(fuzzed: Fuzzed, ws: ClientConnection, data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["predict", "feedback"]) | JSON)
    body = data.draw(PREDICT if kind == "predict" else feedback_bodies(fuzzed.pids))
    message = {"type": kind, "id": data.draw(JSON), **body} if isinstance(body, dict) else body
    text = json.dumps(message, allow_nan=True)
    if data.draw(st.booleans()):
        text = data.draw(st.sampled_from([text[: len(text) // 2], text + "}", "\ufeff" + text, text]))
    ws.send(text)
    reply = json.loads(ws.recv(timeout=30))
    assert isinstance(reply["status"], int)
    fuzzed.check(reply["status"], f"WS {text[:300]}: {json.dumps(reply)[:500]}")


# --- the classics -------------------------------------------------------------------------------

DEEP = "[" * 10_000 + "]" * 10_000
MILLION = "[" + ", ".join(["0.5"] * 10**6) + "]"


@pytest.mark.parametrize(
    "path,text",
    [
        ("/predict", DEEP),
        ("/predict", f'{{"model": "fz", "features": {DEEP}}}'),
        ("/predict", '{"model": "fz", "features": ' + "[" * 600 + "]" * 600 + "}"),
        ("/predict", '{"model": "fz", "instances": [' + "[" * 900 + "]" * 900 + "]}"),
        ("/predict", '{"model": "fz-named", "features": {"a": ' + "[" * 800 + "]" * 800 + "}}"),
        ("/feedback", f'{{"prediction_id": {DEEP}, "label": 1}}'),
        ("/feedback", '{"model": "fz", "features": [1, 2], "label": ' + "{" * 5000 + "}"),
        ("/models/fz-cfg", '{"n_features": 4, "eta_grid": ' + "[" * 700 + "]" * 700 + "}"),
        ("/predict", f'{{"model": "fz", "features": {MILLION}}}'),
        ("/predict", f'{{"model": "fz", "features": {MILLION[:-1]}, "x"]}}'),
        ("/predict", '{"model": "fz", "features": {"indices": ' + MILLION.replace("0.5", "1") + "}}"),
        ("/feedback", f'{{"model": "fz", "features": {MILLION}, "label": 1}}'),
        (
            "/predict",
            '{"model": "fz-named", "features": {' + ", ".join(f'"n{i}": 1' for i in range(10**5)) + "}}",
        ),
        ("/predict", '{"model": "fz", "model": "fz-named", "features": [1, 2, 3, 4, 5, 6, 7, 8]}'),
        ("/feedback", '{"prediction_id": "x", "prediction_id": 5, "label": 1, "label": "one"}'),
        ("/predict", ""),
        ("/predict", "null"),
        ("/predict", '"just a string"'),
        ("/predict", "1e999999"),
        ("/predict", '{"model": "fz", "features": [NaN, Infinity, -Infinity, 1, 1, 1, 1, 1]}'),
        ("/feedback", '{"model": "fz-raw", "features": [1e308, 1, 1, 1, 1, 1, 1, 1], "label": 1}'),
        ("/predict", '{"model": "fz", "features": [1, 2, 3, 4, 5, 6, 7, 8]'),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None,
)
def test_the_classics(fuzzed: Fuzzed, path: str, text: str) -> None:
    method = "PUT" if path.startswith("/models") else "POST"
    status = fuzzed.send(method, path, text.encode())
    assert 400 <= status < 500


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/xml",
        "application/json; charset=latin-1",
        "application/vnd.api+json",
        "*/*",
    ],
)
def test_wrong_content_types(fuzzed: Fuzzed, content_type: str | None) -> None:
    body = json.dumps({"model": "fz", "features": PROBE[0]}).encode()
    status = fuzzed.send("POST", "/predict", body, content_type)
    assert status < 500
    fuzzed.send("POST", "/feedback", b"a=1&b=2", content_type)


@pytest.mark.parametrize("raw", [b"\xff\xfe\x00{", b'{"model": "fz\xc3", "features": [1]}', b"\x00" * 64])
def test_invalid_utf8(fuzzed: Fuzzed, raw: bytes) -> None:
    assert 400 <= fuzzed.send("POST", "/predict", raw) < 500


def test_deep_json_and_huge_ids_on_the_websocket(fuzzed: Fuzzed, ws: ClientConnection) -> None:
    for text in [
        DEEP,
        '{"type": "predict", "id": ' + "[" * 900 + "]" * 900 + ', "model": "fz"}',
        '{"type": ' + "[" * 900 + "]" * 900 + "}",
        '{"type": "predict", "id": NaN, "model": "fz", "features": [1, 2, 3, 4, 5, 6, 7, 8]}',
        '{"type": "feedback", "id": {"a": {"b": {"c": {"d": 1}}}}, "prediction_id": '
        + "[" * 800
        + "]" * 800
        + "}",
    ]:
        ws.send(text)
        reply = json.loads(ws.recv(timeout=30))  # strict JSON back, whatever came in
        assert json.dumps(reply, allow_nan=False)
        fuzzed.check(reply["status"], f"WS {text[:200]}: {reply}")
