"""A start that talks: the port answers at once, ``/healthz`` while the kernels compile, ``/readyz``
saying what is left ("compiling kernels k of n"), requests a 503 with ``Retry-After`` meanwhile,
and the log shows the progress. A cold kernel cache (a directory of the test's own) makes the
compile long enough to watch."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .support.private_redis import free_port

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def test_the_service_listens_and_says_what_is_left_while_kernels_compile(
    redis_url: str, redis_client: object, tmp_path: Path
) -> None:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ACOG_")},
        "ACOG_REDIS_URL": redis_url,
        "ACOG_DATA_DIR": str(tmp_path / "data"),
        "ACOG_JIT_CACHE_DIR": str(tmp_path / "kernels"),  # cold: everything compiles
        "ACOG_DEFAULT_MODEL": '{"name": "default", "n_features": 3, "algorithm": "perceptron"}',
    }
    log = tmp_path / "serve.log"
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "serve", "--port", str(port)], env=env, cwd=ROOT,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    details: list[str] = []
    refused: list[httpx.Response] = []
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            try:
                ready = httpx.get(f"{url}/readyz", timeout=5)
            except httpx.TransportError:
                time.sleep(0.05)
                continue
            if ready.status_code == 200:
                break
            assert ready.status_code == 503 and ready.json()["status"] == "starting", ready.text
            details.append(ready.json()["detail"])
            assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200  # alive while it compiles
            if not refused:
                refused.append(httpx.post(f"{url}/predict", json={"features": [1, 0, 0]}, timeout=5))
            time.sleep(0.1)
        else:
            pytest.fail(f"not ready in 900 s:\n{log.read_text()[-3000:]}")
        assert httpx.post(f"{url}/predict", json={"features": [1, 0, 0]}, timeout=5).status_code == 200
    finally:
        process.terminate()
        process.wait(60)
    assert any(d.startswith("compiling kernels 1 of 1 (perceptron)") for d in details), details
    [early] = refused
    assert early.status_code == 503 and early.headers["retry-after"] == "1", early.text
    assert early.json()["detail"][0]["msg"].startswith("the service is starting: "), early.text
    text = log.read_text()
    assert "start-up: compiling kernels 1 of 1 (perceptron)" in text, text
    assert "ready: 1 model(s) serving" in text, text
