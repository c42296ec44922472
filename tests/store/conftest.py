"""Fixtures of the model_store tests, all on real Redis servers:

- ``store``: a store on the shared test Redis (``ACOG_TEST_REDIS_URL``), its database flushed around
  each test;
- ``private_redis``: a redis-server of the test's own, to kill, restart or reconfigure;
- ``redis_cluster``: a real 3-master Redis Cluster (one per session, flushed around each test that
  uses it), started from ``redis-server --cluster-enabled`` on loopback ports;
- ``backend`` / ``any_store``: parametrised over "redis" (the test database) and "cluster", so that
  one test checks the same contract on both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest
import redis
from redis.cluster import RedisCluster as SyncCluster

from model_store import RedisModelStore

from ..support.private_redis import PrivateRedis
from ..support.redis_cluster import RedisClusterProcesses

BACKENDS = ["redis", "cluster"]


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


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterProcesses]:
    """A 3-master Redis Cluster for the whole session (starting one takes about 2 s)."""
    cluster = RedisClusterProcesses(tmp_path_factory.mktemp("redis-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


def flush_cluster(cluster: RedisClusterProcesses) -> None:
    """Empty every master (data and script caches)."""
    for port in cluster.ports:
        with redis.Redis(host="127.0.0.1", port=port) as node:
            node.flushall()
            node.script_flush()


@dataclass(frozen=True)
class Backend:
    """Where a parametrised test runs: the store's URL and a synchronous client to look inside."""

    name: str
    url: str
    client: redis.Redis | SyncCluster

    def keys(self, pattern: str) -> set[bytes]:
        """Every key matching ``pattern``, on every shard (test databases are small)."""
        if isinstance(self.client, SyncCluster):
            found = self.client.keys(pattern, target_nodes=SyncCluster.PRIMARIES)
            if isinstance(found, dict):  # one answer per node
                return {key for keys in found.values() for key in keys}
            return set(cast(list[bytes], found))
        return set(cast(list[bytes], self.client.keys(pattern)))

    def snapshot(self) -> dict[bytes, bytes]:
        """Every key and its serialised value (DUMP): equal snapshots mean nothing was written."""
        return {key: cast(bytes, self.client.dump(key)) for key in self.keys("*")}

    def port_of(self, key: str) -> int | None:
        """The port of the shard holding ``key`` (None on a single Redis)."""
        if isinstance(self.client, SyncCluster):
            return int(self.client.get_node_from_key(key).port)
        return None


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, redis_url: str) -> Iterator[Backend]:
    """The test database of the shared Redis, or the session's Redis Cluster; empty at the start."""
    if request.param == "redis":
        client = request.getfixturevalue("redis_client")
        yield Backend("redis", redis_url, client)
        return
    cluster: RedisClusterProcesses = request.getfixturevalue("redis_cluster")
    flush_cluster(cluster)
    with cluster.client() as cluster_client:
        yield Backend("cluster", cluster.url, cluster_client)
    flush_cluster(cluster)


@pytest.fixture
async def any_store(backend: Backend) -> AsyncIterator[RedisModelStore]:
    """A RedisModelStore on ``backend`` (so each test using it runs on Redis and on a Redis Cluster)."""
    model_store = RedisModelStore.from_url(backend.url)
    yield model_store
    await model_store.close()
