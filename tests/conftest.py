"""Shared fixtures: a real Redis (never a fake) of the session's own, the data sets; the kernel cache.

Redis: the session starts its own ``redis-server`` on a free loopback port (once, on first use) and
stops it at the end; a server the user runs is touched only when ``ACOG_TEST_REDIS_URL`` names it.

Data sets: read from ``$ACOG_DATASETS_DIR`` (a mirror), else from the download cache that
``acog datasets fetch`` fills. When a file is missing, the session stops at once with one line
saying how to get it: the data are part of the test environment, and a run without them must not
pass by skipping.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from service.blas import TOO_LATE, pin_blas_core

# The test process is an entry point too. It loads OpenBLAS's kernels as `acog serve` does, so that
# the library here computes the bits the served processes it is compared with compute (SDROGD, SACOG,
# NOGD and OPID's migration call BLAS; see service.blas); numpy must not be loaded yet.
if pin_blas_core().reason == TOO_LATE:
    raise RuntimeError("tests/conftest.py: numpy was loaded before the BLAS kernels could be chosen")

from service import jit_cache

# It chooses the kernels' disk cache before any test module imports service.learners (numba fixes a
# kernel's cache location when it is decorated).
jit_cache.configure()

from service.datasets.fetch import DATASETS_ENV, HOW, cache_dir, missing_files  # noqa: E402
from service.datasets.sources import FILES  # noqa: E402

from .support.private_redis import REDIS_SERVER, PrivateRedis  # noqa: E402

REDIS_ENV = "ACOG_TEST_REDIS_URL"
"""Names a Redis server (and database) for the tests instead of a server of their own; it is flushed."""

# Development worktrees sit beside a mirror of the data sets; a clone elsewhere has none, and uses
# $ACOG_DATASETS_DIR or the download cache.
_BESIDE = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _datasets_dir() -> Path:
    if os.environ.get(DATASETS_ENV):
        return Path(os.environ[DATASETS_ENV])
    if not missing_files(FILES, cache_dir()) or not _BESIDE.is_dir():
        return cache_dir()
    os.environ[DATASETS_ENV] = str(_BESIDE)  # services and examples the tests start read it too
    return _BESIDE


DATASETS = _datasets_dir()
"""The directory the tests read the data sets from."""


def pytest_configure(config: pytest.Config) -> None:
    """Stop before collecting anything, in one line saying how, when a data set file is absent."""
    absent = missing_files(FILES, DATASETS) if DATASETS.is_dir() else list(FILES)
    if absent:
        raise pytest.UsageError(
            f"the tests need the data sets: {len(absent)} file(s) absent from {DATASETS} "
            f"(e.g. {absent[0]}); {HOW}"
        )


@pytest.fixture(scope="session", autouse=True)
def kernel_cache() -> None:
    """Every algorithm's kernels in the disk cache before the first test: a service a test starts
    (which warms them all before it is ready, ``ACOG_WARM_UP=all``) then loads them from the cache
    instead of compiling them again. The compile happens once per change of the kernels' source."""
    from service.learners import warm_up

    warm_up()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of the test Redis database: ``$ACOG_TEST_REDIS_URL`` if set (it must answer), else a
    ``redis-server`` this session starts on a free loopback port. Fails (never skips) without one."""
    named = os.environ.get(REDIS_ENV)
    if named:
        client = redis.Redis.from_url(named, socket_connect_timeout=2)
        try:
            client.ping()
        except redis.exceptions.ConnectionError as exc:
            pytest.fail(
                f"{REDIS_ENV}={named} does not answer ({exc}); unset it to use a server of the tests' own",
                pytrace=False,
            )
        finally:
            client.close()
        yield named
        return
    if not shutil.which(REDIS_SERVER):
        pytest.fail(
            f"{REDIS_SERVER} not found: install Redis 7 or later (Debian package redis-server) "
            f"or set {REDIS_ENV}",
            pytrace=False,
        )
    server = PrivateRedis(tmp_path_factory.mktemp("session-redis"), appendonly=False)
    server.start()
    try:
        yield server.url
    finally:
        server.terminate()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A synchronous client on the test database, flushed before and after the test."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


def dataset_path(*parts: str) -> Path:
    """Path of a data set file under :data:`DATASETS`; fails (never skips) the test when it is absent:
    the data is part of the test environment, and a run without it must not pass."""
    path = DATASETS.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"data set file {path} is absent; {HOW}", pytrace=False)
    return path
