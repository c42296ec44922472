"""Shared fixtures: a real Redis (never a fake) and the shared benchmark data sets; the kernel cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from service import jit_cache

# The test process is an entry point: it chooses the kernels' disk cache before any test module
# imports service.learners (numba fixes a kernel's cache location when it is decorated).
jit_cache.configure()

REDIS_URL = os.environ.get("ACOG_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"

START_REDIS = (
    'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" '
    "--appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log"
)


@pytest.fixture(scope="session", autouse=True)
def kernel_cache() -> None:
    """Every algorithm's kernels in the disk cache before the first test: a service a test starts
    (which warms them all before it is ready, ``ACOG_WARM_UP=all``) then loads them from the cache
    instead of compiling them again. The compile happens once per change of the kernels' source."""
    from service.learners import warm_up

    warm_up()


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The URL of the test Redis database; fails (never skips) when it is down."""
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as exc:
        pytest.fail(
            f"Redis at {REDIS_URL} is not reachable ({exc}). Start it with:\n  {START_REDIS}\n"
            "or point ACOG_TEST_REDIS_URL at another server.",
            pytrace=False,
        )
    finally:
        client.close()
    return REDIS_URL


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A synchronous client on the test database, flushed before and after the test."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


def dataset_path(*parts: str) -> Path:
    """Path of a file under ``../shared/datasets``; fails (never skips) the test when it is absent:
    the data is part of the test environment, and CI without it must not pass."""
    path = DATASETS.joinpath(*parts)
    if not path.exists():
        pytest.fail(
            f"shared data set {path} is absent (expected ../shared/datasets beside the repo)", pytrace=False
        )
    return path
