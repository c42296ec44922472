"""``acog serve --workers 2``: prometheus-client's multi-process mode adds up the workers' request
counts, names no unknown model, exports the store and model gauges of the answering worker, and
(as documented) no ``process_*`` or ``python_*`` series."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from ..support.private_redis import PrivateRedis
from ..support.service_process import ROOT, ServiceProcess
from .test_operator_metrics import requests, samples, value

WORKERS = 2
D = 6


class Workers(ServiceProcess):
    """``acog serve --workers N`` (ServiceProcess runs one worker)."""

    def start(self, timeout: float = 120.0) -> None:
        log = self.log_path.open("ab")
        command = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--workers", str(WORKERS)]
        self.process = subprocess.Popen(command, env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log()
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"the service did not become ready:\n{self.log()}")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    directory = tmp_path_factory.mktemp("operator-metrics-workers")
    server = PrivateRedis(directory)
    server.start()
    metrics_dir = directory / "prometheus-multiproc"
    service = Workers(directory, {"ACOG_REDIS_URL": server.url, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)})
    service.start()
    yield service
    service.stop()
    server.close()


def fresh_get(url: str, path: str) -> httpx.Response:
    """A new connection per request, so that the requests spread over the workers."""
    with httpx.Client(base_url=url, timeout=30) as http:
        return http.get(path)


def test_workers_add_up_request_counts_and_bound_model_names(service: Workers) -> None:
    with httpx.Client(base_url=service.url, timeout=30) as http:
        assert http.put("/models/m", json={"n_features": D}).status_code == 201
    before = fresh_get(service.url, "/metrics").text
    for i in range(40):
        assert fresh_get(service.url, f"/models/card{i}").status_code == 404
    after = fresh_get(service.url, "/metrics").text
    assert (
        requests(after, "/models/{name}", "GET", 404) - requests(before, "/models/{name}", "GET", 404) == 40
    )
    assert "card" not in after
    names = {name for name, _ in samples(after)}
    assert not {n for n in names if n.startswith(("process_", "python_"))}
    assert value(after, "acog_store_up") == 1 and value(after, "acog_ready") == 1
    deadline = time.monotonic() + 15  # the other worker learns of the model from the control stream
    while True:
        counts = [
            value(fresh_get(service.url, "/metrics").text, "acog_models", status="serving") for _ in range(6)
        ]
        if set(counts) == {1}:
            break
        assert time.monotonic() < deadline, counts
        time.sleep(0.2)
