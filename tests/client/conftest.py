"""Fixtures of the client's tests: a real service (subprocess) on a private Redis, and german."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from service.client import Client, RetryPolicy
from service.datasets import load

from ..conftest import dataset_path
from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess

N_FEATURES = 24


@dataclass(frozen=True)
class German:
    """german.mat in its first permutation: raw rows as the API takes them, labels, a probe set."""

    rows: list[list[float]]
    y: list[int]
    probe: list[list[float]]


@pytest.fixture(scope="session")
def german() -> German:
    dataset_path("german", "german.mat")
    data = load("german")
    assert data.permutations is not None
    order = data.permutations[0]
    dense = data.X[order].toarray()
    rng = np.random.default_rng(19)
    probe = dense[rng.choice(len(dense), 20, replace=False)] * rng.uniform(0.5, 1.5, size=(20, N_FEATURES))
    return German(dense.tolist(), [int(v) for v in data.y[order]], probe.tolist())


@dataclass
class Served:
    """A running service, the Redis it uses, and a client of it."""

    service: ServiceProcess
    redis: PrivateRedis
    client: Client


@contextlib.contextmanager
def serve(directory: Path, env: dict[str, str] | None = None) -> Iterator[Served]:
    """A service on a redis-server of its own for the duration of the block."""
    # appendfsync always: a SIGKILLed Redis keeps every write it acknowledged. With everysec, a
    # loaded machine can postpone the AOF write past the reply (Redis's "fsync is taking too long"
    # path), and the restart then loses acknowledged labels, which is Redis's durability, not the
    # client's retries under test here.
    redis_server = PrivateRedis(directory, appendfsync="always")
    redis_server.start()
    service = ServiceProcess(directory, {"ACOG_REDIS_URL": redis_server.url, **(env or {})})
    try:
        service.start()
        with Client(service.url, retry=RetryPolicy(attempts=30, deadline=60.0)) as client:
            yield Served(service, redis_server, client)
    finally:
        service.kill()
        redis_server.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One service shared by a test module."""
    with serve(tmp_path_factory.mktemp("client")) as running:
        yield running
