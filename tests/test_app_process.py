"""Process-wide choices the app makes while it serves: FastAPI's OpenTelemetry hook and the GC.

Both were found with py-spy under single-/predict load (``python -m bench.service_load``): the
per-request OpenTelemetry provider lookup and CPython's default garbage-collector thresholds.
These tests run the app's real lifespan against the test Redis.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import redis

from service.api.app import GC_THRESHOLDS, create_app
from service.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def settings(redis_url: str, tmp_path: Path, **overrides: object) -> Settings:
    return Settings(redis_url=redis_url, data_dir=tmp_path, **overrides)  # type: ignore[arg-type]


def test_fastapi_opentelemetry_is_off_unless_asked_for(redis_url: str, tmp_path: Path) -> None:
    off = create_app(settings(redis_url, tmp_path))
    on = create_app(settings(redis_url, tmp_path, opentelemetry=True))
    assert not off._native_telemetry.enabled()  # no per-request provider lookups
    assert (off._telemetry["tracing"], off._telemetry["metrics"], off._telemetry["logs"]) == (False,) * 3
    assert (on._telemetry["tracing"], on._telemetry["metrics"], on._telemetry["logs"]) == (True,) * 3


async def test_gc_thresholds_are_raised_while_serving_and_restored_after(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    before = gc.get_threshold()
    assert before != GC_THRESHOLDS
    app = create_app(settings(redis_url, tmp_path))
    async with app.router.lifespan_context(app):
        assert gc.get_threshold() == GC_THRESHOLDS
    assert gc.get_threshold() == before
