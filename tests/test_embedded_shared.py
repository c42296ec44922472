"""Two ``acog serve`` in one folder share its embedded Redis, and stopping one never stops it under
the other: the server is reference-counted, and the log says so."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import psutil

from service.client import Client

from .support.service_process import ServiceProcess


def embedded_servers(data_dir: Path) -> list[psutil.Process]:
    """The redis-server processes whose append-only file is in ``data_dir``."""
    found = []
    for process in psutil.process_iter(["name", "cwd"]):
        try:
            if "redis-server" in (process.info["name"] or "") and process.info["cwd"] == str(data_dir):
                found.append(process)
        except psutil.Error:
            continue
    return found


def test_stopping_one_of_two_services_leaves_the_other_serving(tmp_path: Path) -> None:
    env = {"ACOG_REDIS_URL": "", "ACOG_WARM_UP": "models"}
    first, second = ServiceProcess(tmp_path, env), ServiceProcess(tmp_path, env)
    first.start()
    try:
        second.start()
        data_dir = (tmp_path / "data").resolve()
        [server] = embedded_servers(data_dir)  # one server for both
        with Client(first.url) as a, Client(second.url) as b:
            a.put_model("shared", {"n_features": 2})
            b.wait_ready()
            assert second.stop() in (0, -15)  # uvicorn re-raises SIGTERM once it has shut down
            assert "left running for 1 other process" in second.log()
            assert server.is_running() and server.status() != psutil.STATUS_ZOMBIE
            assert httpx.get(f"{first.url}/readyz", timeout=5).status_code == 200
            p = a.predict([1.0, 0.0], model="shared")
            assert a.feedback(p, 1).applied  # the store still takes writes
        assert "joined the server 1 other process(es) use" in second.log()
    finally:
        first.stop()
        second.stop()
    assert "stopped (no other process used it)" in first.log()
    assert not [s for s in embedded_servers(data_dir) if s.status() != psutil.STATUS_ZOMBIE]
    assert not os.listdir(data_dir / "users")
