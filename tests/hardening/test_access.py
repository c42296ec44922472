"""Access control on the real server: every route, every key, the WebSocket, and the open mode.

With keys configured: predict, feedback and reads take an API key or an admin key; creating,
replacing and deleting models and forcing a checkpoint take an admin key; ``/healthz``,
``/readyz`` and ``/metrics`` are open (probes and Prometheus scrape them; SECURITY.md says
why). No key or an unknown one is 401, an API key on an admin route 403, and a refused
request changes nothing. With no keys the service runs, warns at start and ``/readyz``
says ``"auth": "open"``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from ..e2e.client import Running, detail_of
from ..support.service_process import ROOT
from .conftest import (
    ADMIN_KEYS,
    API_KEYS,
    CONFIG,
    KEYED_ENV,
    PROBE,
    authorised,
    bearer,
    raw,
    snapshot,
    start,
    train,
)

ROW = PROBE[0]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with start(tmp_path_factory, "keyed", KEYED_ENV) as run:  # the embedded store
        authorised(run.api, ADMIN_KEYS[0])
        train(run.api, "guarded")
        run.api.put_model("spare", CONFIG)
        yield run


@pytest.fixture(scope="module")
def open_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with start(tmp_path_factory, "open", {"ACOG_API_KEYS": "", "ACOG_ADMIN_KEYS": ""}) as run:
        yield run


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    body: Any = None
    admin: bool = False


ROUTES = [
    Route("POST", "/predict", {"model": "guarded", "features": ROW}),
    Route("POST", "/feedback", {"model": "spare", "features": ROW, "label": 1}),
    Route("GET", "/models"),
    Route("GET", "/models/guarded"),
    Route("PUT", "/models/spare", CONFIG, admin=True),
    Route("DELETE", "/models/absent", admin=True),
    Route("POST", "/models/guarded/checkpoint", admin=True),
]
OPEN_ROUTES = ["/healthz", "/readyz", "/metrics"]


def call(run: Running, route: Route, headers: dict[str, str] | None = None) -> Any:
    kwargs: dict[str, Any] = {"headers": headers or {}}
    if route.body is not None:
        kwargs["json"] = route.body
    return raw(run, route.method, route.path, **kwargs)


def assert_unauthorised(response: Any, status: int, says: str) -> None:
    assert response.status_code == status, response.text
    [detail] = detail_of(response)
    assert detail["loc"] == ["header", "Authorization"], detail
    assert says in detail["msg"], detail
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("route", ROUTES, ids=[f"{r.method} {r.path}" for r in ROUTES])
def test_every_route_needs_the_right_key(keyed: Running, route: Route) -> None:
    before = snapshot(keyed.api, "guarded"), snapshot(keyed.api, "spare")
    refusals = [
        ({}, 401, "missing Authorization"),
        (bearer("not-a-key-of-this-service"), 401, "unknown API key"),
        ({"Authorization": f"Basic {API_KEYS[0]}"}, 401, "missing Authorization"),
        ({"Authorization": "Bearer"}, 401, "missing Authorization"),
        (bearer(API_KEYS[0][:-1]), 401, "unknown"),  # a prefix of a key
        (bearer(API_KEYS[0] + "0"), 401, "unknown"),  # a key and more
        (bearer(API_KEYS[0].upper()), 401, "unknown"),  # keys are case-sensitive
        ({"Authorization": f"Bearer {API_KEYS[0]},{ADMIN_KEYS[0]}"}, 401, "unknown"),
    ]
    if route.admin:
        refusals += [(bearer(key), 403, "takes an admin key") for key in API_KEYS]
    for headers, status, says in refusals:
        assert_unauthorised(call(keyed, route, headers), status, says)
    assert (snapshot(keyed.api, "guarded"), snapshot(keyed.api, "spare")) == before  # nothing changed

    allowed = ADMIN_KEYS if route.admin else [*API_KEYS, *ADMIN_KEYS]
    for key in allowed:
        response = call(keyed, route, bearer(key))
        assert response.status_code not in (401, 403), (key, response.text)
        assert response.status_code < 500, response.text
    # "Bearer" in any case, and extra spaces before the key, are accepted
    response = call(keyed, route, {"Authorization": f"bEaReR  {allowed[-1]}"})
    assert response.status_code not in (401, 403), response.text


def test_probes_and_metrics_are_open(keyed: Running) -> None:
    for path in OPEN_ROUTES:
        response = raw(keyed, "GET", path)
        assert response.status_code == 200, (path, response.text)
    assert raw(keyed, "GET", "/readyz").json()["auth"] == "keys"
    assert 'acog_model_version{model="guarded"}' in raw(keyed, "GET", "/metrics").text


def test_refused_admin_calls_leave_the_models_alone(keyed: Running) -> None:
    api = keyed.api
    before = snapshot(api, "guarded")
    for key in [None, "intruder", API_KEYS[0], API_KEYS[2]]:
        headers = bearer(key) if key else {}
        assert raw(keyed, "PUT", "/models/guarded", json=CONFIG, headers=headers).status_code in (401, 403)
        assert raw(keyed, "DELETE", "/models/guarded", headers=headers).status_code in (401, 403)
        assert raw(keyed, "PUT", "/models/intruded", json=CONFIG, headers=headers).status_code in (401, 403)
    assert snapshot(api, "guarded") == before
    assert [m["name"] for m in api.http.get("/models").json()["models"]] == ["guarded", "spare"]


def test_the_websocket_needs_a_key(keyed: Running) -> None:
    message = json.dumps({"type": "predict", "id": 1, "model": "guarded", "features": ROW})
    for headers in [{}, bearer("intruder"), {"Authorization": f"Basic {API_KEYS[0]}"}]:
        with connect(keyed.service.ws_url, additional_headers=headers) as ws:
            with pytest.raises(ConnectionClosed) as closed:
                ws.send(message)
                ws.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008, closed.value
            assert "API key" in closed.value.rcvd.reason
    for key in [*API_KEYS, *ADMIN_KEYS]:
        with connect(keyed.service.ws_url, additional_headers=bearer(key)) as ws:
            ws.send(message)
            reply = json.loads(ws.recv(timeout=10))
            assert reply["ok"] and reply["id"] == 1, reply


def test_without_keys_the_service_is_open_and_says_so(open_service: Running) -> None:
    ready = raw(open_service, "GET", "/readyz").json()
    assert ready["status"] == "ready" and ready["auth"] == "open"
    assert "no ACOG_API_KEYS or ACOG_ADMIN_KEYS set: the API is open" in open_service.service.log()
    created = raw(open_service, "PUT", "/models/anyone", json=CONFIG)
    assert created.status_code == 201, created.text
    response = raw(open_service, "POST", "/predict", json={"model": "anyone", "features": ROW},
                   headers=bearer("whatever"))  # fmt: skip
    assert response.status_code == 200, response.text
    with connect(open_service.service.ws_url) as ws:
        ws.send(json.dumps({"type": "predict", "id": "x", "model": "anyone", "features": ROW}))
        assert json.loads(ws.recv(timeout=10))["ok"]


def serve_with(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``acog serve`` with ``env``, for settings that must stop it before it listens."""
    return subprocess.run(
        [sys.executable, "-m", "service.cli", "serve", "--port", "1"],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("bad", ["clé-0123456789abcdef", "with space-0123456789", "tab\there-0123456789"])
def test_a_key_no_header_can_carry_is_refused_at_start_without_printing_it(bad: str) -> None:
    result = serve_with({"ACOG_API_KEYS": f"fine-0123456789abcdef,{bad}"})
    assert result.returncode == 2  # a user's mistake: one line naming the setting (service.serve_checks)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "ACOG_API_KEYS" in result.stderr and "key 2 of 2 is not printable ASCII" in result.stderr, (
        result.stderr
    )
    assert bad not in result.stderr and "fine-0123456789abcdef" not in result.stderr


def test_short_keys_are_accepted_with_a_warning(tmp_path_factory: pytest.TempPathFactory) -> None:
    with start(tmp_path_factory, "short-keys", {"ACOG_API_KEYS": "short", "ACOG_ADMIN_KEYS": ""}) as run:
        assert "1 API or admin key(s) shorter than 16 characters" in run.service.log()
        assert raw(run, "GET", "/models", headers=bearer("short")).status_code == 200
        assert raw(run, "GET", "/models", headers=bearer("shor")).status_code == 401
