"""Start-up refuses a store that lost its data, rather than serving into nothing.

- With ``ACOG_STORE_EPOCH`` pinned to the epoch ``/readyz`` showed, a flushed store (a Redis
  restarted without persistence) stops the start with one clear error.
- Without it, a store that lost its identity but still holds the service's keys (evicted under
  ``maxmemory``, a partial restore) is refused too: those keys are the remains of lost data.
- An empty store without a pinned epoch is a new store: the service starts afresh on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path / "redis")
    (tmp_path / "redis").mkdir()
    server.start()
    yield server
    server.close()


def started(tmp_path: Path, name: str, env: dict[str, str]) -> ServiceProcess:
    (tmp_path / name).mkdir()
    service = ServiceProcess(tmp_path / name, env)
    service.start()
    return service


def refused(tmp_path: Path, name: str, env: dict[str, str]) -> str:
    (tmp_path / name).mkdir()
    service = ServiceProcess(tmp_path / name, env)
    with pytest.raises(RuntimeError, match="exited with") as failure:
        service.start(timeout=60)
    return str(failure.value)


def test_a_pinned_epoch_refuses_a_flushed_store(tmp_path: Path, store: PrivateRedis) -> None:
    env = {"ACOG_REDIS_URL": store.url}
    first = started(tmp_path, "first", env)
    assert httpx.put(f"{first.url}/models/m", json={"n_features": 3}).status_code == 201
    epoch = httpx.get(f"{first.url}/readyz").json()["store_epoch"]
    assert len(epoch) == 16
    first.stop()

    again = started(tmp_path, "again", {**env, "ACOG_STORE_EPOCH": epoch})  # the same store: fine
    assert httpx.get(f"{again.url}/models/m").status_code == 200
    again.stop()

    redis.Redis.from_url(store.url).flushall()  # a Redis restarted without its data
    log = refused(tmp_path, "after-flush", {**env, "ACOG_STORE_EPOCH": epoch})
    assert f"ACOG_STORE_EPOCH is {epoch}" in log and "no epoch at all" in log and "lost its data" in log


def test_leftover_keys_without_an_identity_are_refused(tmp_path: Path, store: PrivateRedis) -> None:
    env = {"ACOG_REDIS_URL": store.url}
    first = started(tmp_path, "first", env)
    assert httpx.put(f"{first.url}/models/m", json={"n_features": 3}).status_code == 201
    first.stop()
    client = redis.Redis.from_url(store.url)
    client.delete("acog:{acog}:identity")  # evicted: the rest is still there
    log = refused(tmp_path, "evicted", env)
    assert "lost part of its data" in log and "acog:" in log

    client.flushall()  # an empty store is a new store
    fresh = started(tmp_path, "fresh", env)
    assert httpx.get(f"{fresh.url}/models").json()["models"] == []
    fresh.stop()


def test_the_refusal_is_one_line_and_exit_code_2(tmp_path: Path, store: PrivateRedis) -> None:
    """``acog serve`` checks the store before it starts the server: a user-facing line, no traceback."""
    env = {**os.environ, "ACOG_REDIS_URL": store.url, "ACOG_STORE_EPOCH": "0123456789abcdef"}
    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "ACOG_STORE_EPOCH is 0123456789abcdef" in line and "no epoch at all" in line


def test_nothing_is_written_into_a_store_that_lost_its_data(tmp_path: Path, store: PrivateRedis) -> None:
    """Redis restarts empty under a running service: every write (PUT, DELETE, a schema change, a
    checkpoint, a label) is refused with 503 store_lost and Retry-After, and no key appears."""
    env = {"ACOG_REDIS_URL": store.url, "ACOG_MAINTENANCE_INTERVAL_SECONDS": "0.2"}
    service = started(tmp_path, "service", env)
    try:
        url = service.url
        assert httpx.put(f"{url}/models/m", json={"n_features": 3}).status_code == 201
        named = {"feature_names": ["a", "b"]}
        assert httpx.put(f"{url}/models/named", json=named).status_code == 201
        prediction = httpx.post(f"{url}/predict", json={"model": "m", "features": [1, 0, 0]}).json()
        store.stop()
        for leftover in store.directory.iterdir():  # its data gone: a Redis restarted empty
            if leftover.name != "redis.log":
                shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        store.start()
        client = redis.Redis.from_url(store.url)
        attempts = [
            httpx.put(f"{url}/models/new", json={"n_features": 3}),
            httpx.put(f"{url}/models/m?replace=true", json={"n_features": 4}),
            httpx.delete(f"{url}/models/m"),
            httpx.post(f"{url}/models/named/schema", json={"feature_names": ["a", "b", "c"]}),
            httpx.post(f"{url}/models/m/checkpoint"),
            httpx.post(f"{url}/predict", json={"model": "m", "features": [1, 0, 0]}),
            httpx.post(f"{url}/feedback", json={"prediction_id": prediction["prediction_id"], "label": 1}),
        ]
        for response in attempts:
            assert response.status_code == 503, (response.request.url, response.text)
            assert response.json()["detail"][0]["type"] == "store_lost", response.text
            assert int(response.headers["Retry-After"]) >= 1
        time.sleep(1.0)  # maintenance rounds, followers, checkpoint writers: none writes either
        assert client.keys("*") == []
    finally:
        service.kill()
