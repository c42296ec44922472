"""Fixtures of the model_store tests: a store on the real test Redis (DB 15), flushed around each test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis

from model_store import RedisModelStore

from ..support.private_redis import PrivateRedis


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def store(redis_client: redis.Redis, redis_url: str) -> AsyncIterator[RedisModelStore]:
    """A RedisModelStore on the test database (``redis_client`` flushes it before and after)."""
    model_store = RedisModelStore.from_url(redis_url)
    yield model_store
    await model_store.close()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A started redis-server of the test's own; killed at the end whatever happens."""
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.close()
