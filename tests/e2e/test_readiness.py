"""``/readyz`` on a real server says whether the store accepts writes, not only whether it answers."""

from __future__ import annotations

from pathlib import Path

import httpx
import redis

from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess


def test_readyz_goes_503_while_redis_is_full(tmp_path: Path) -> None:
    (tmp_path / "redis").mkdir()
    store = PrivateRedis(tmp_path / "redis")
    store.start()
    service = ServiceProcess(tmp_path, {"ACOG_REDIS_URL": store.url})
    admin = redis.Redis(port=store.port)
    try:
        service.start()
        assert httpx.get(f"{service.url}/readyz").status_code == 200
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", 1)  # below what Redis already uses: it refuses writes
        full = httpx.get(f"{service.url}/readyz")
        assert full.status_code == 503, full.text
        assert full.json()["status"] == "unavailable" and "refuses writes" in full.json()["detail"]
        assert httpx.get(f"{service.url}/healthz").status_code == 200  # alive, not ready
        admin.config_set("maxmemory", 0)
        assert httpx.get(f"{service.url}/readyz").status_code == 200
    finally:
        admin.close()
        service.stop()
        store.close()
