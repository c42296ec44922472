"""Fixtures of the engine tests: the asyncio backend, and ``replicas``, a fleet of engines on the
shared test Redis (its database flushed around each test by ``redis_client``), closed afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis

from .test_engine import Replicas


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def replicas(redis_client: redis.Redis, redis_url: str) -> AsyncIterator[Replicas]:
    fleet = Replicas(redis_url)
    yield fleet
    await fleet.close()
