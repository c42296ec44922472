"""Fixtures of the replica suite: German rows, and a private store (one Redis, or a 3-master cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from service.datasets import load

from ..conftest import dataset_path
from ..support.private_redis import PrivateRedis
from ..support.redis_cluster import RedisClusterProcesses


@pytest.fixture(scope="session")
def rows() -> tuple[list[list[float]], list[int], list[list[float]]]:
    """German credit in its first published permutation (raw rows), labels, and 20 probe rows."""
    dataset_path("german", "german.mat")
    data = load("german")
    assert data.permutations is not None
    order = data.permutations[0]
    dense = data.X[order].toarray()
    probe = dense[np.random.default_rng(20).choice(len(dense), 20, replace=False)] * 1.1
    return dense.tolist(), [int(v) for v in data.y[order]], probe.tolist()


@pytest.fixture
def single_redis(tmp_path: Path) -> Iterator[str]:
    server = PrivateRedis(tmp_path / "redis")
    (tmp_path / "redis").mkdir()
    server.start()
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisClusterProcesses]:
    processes = RedisClusterProcesses(tmp_path / "cluster")
    processes.start()
    try:
        yield processes
    finally:
        processes.close()
