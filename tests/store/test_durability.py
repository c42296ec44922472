"""Durable appends (``WAIT``): a label is acknowledged only once the replicas asked for hold it, on one
Redis with a replica and on a Redis Cluster with a replica per master (the wait goes to the primary
owning the model's slot); short of that the store answers StoreUnavailable with a retry hint, and a
retry counts once and is confirmed only once the first try's entry is replicated."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis

from model_store import RedisModelStore, StoreError, StoreUnavailable
from model_store.connection import ConnectionSettings
from model_store.durability import Durability
from model_store.keys import GenerationKeys

from ..support.private_redis import PrivateRedis
from ..support.redis_cluster import RedisClusterProcesses
from .factories import label, new_model, pending

pytestmark = pytest.mark.anyio

WAIT_ONE = Durability(replicas=1, timeout_seconds=0.3)


def durable_store(url: str, durability: Durability = WAIT_ONE) -> RedisModelStore:
    return RedisModelStore.from_url(url, ConnectionSettings(durability=durability))


def sleep_in_background(port: int, seconds: float) -> threading.Thread:
    """``DEBUG SLEEP`` on the server at ``port``: it reads nothing, replication included, meanwhile."""
    thread = threading.Thread(
        target=lambda: redis.Redis(port=port, socket_timeout=seconds + 5).execute_command(
            "DEBUG", "SLEEP", seconds
        )
    )
    thread.start()
    time.sleep(0.1)  # the command is running
    return thread


@pytest.fixture
def primary_and_replica(tmp_path: Path) -> Iterator[tuple[PrivateRedis, PrivateRedis]]:
    """Two private redis-servers, the second a replica of the first, in sync."""
    servers = [PrivateRedis(tmp_path / name) for name in ("primary", "replica")]
    for server in servers:
        server.directory.mkdir()
        server.start()
    primary, replica = servers
    try:
        with redis.Redis(port=primary.port) as client:
            client.config_set("repl-diskless-sync-delay", 0)  # the replica syncs at once
        with redis.Redis(port=replica.port) as client:
            client.replicaof("127.0.0.1", primary.port)
        # In sync means acknowledging writes: a replica that reports its link up can still leave the
        # primary without an acknowledgement for a second or more (seen right after the initial
        # sync), and a WAIT in that window times out. Wait until a write of our own is acknowledged.
        with redis.Redis(port=primary.port) as client:
            deadline = time.monotonic() + 10
            while not (client.set("fixture:sync", 1) and client.execute_command("WAIT", 1, 100) == 1):
                assert time.monotonic() < deadline, "the replica does not acknowledge writes"
            client.delete("fixture:sync")
        yield primary, replica
    finally:
        for server in servers:
            server.close()


async def test_a_label_is_acknowledged_once_a_replica_has_it(
    primary_and_replica: tuple[PrivateRedis, PrivateRedis],
) -> None:
    primary, replica = primary_and_replica
    store = durable_store(primary.url)
    try:
        await new_model(store)
        item = pending("m", 1)
        await store.put_pending("m", 1, [item], ttl_seconds=60)
        [outcome] = await label(store, [(item.prediction_id, 1)])
        assert outcome.status == "appended"
        with redis.Redis(port=replica.port) as client:
            assert client.xlen(GenerationKeys("m", 1).log) == 1  # no wait: WAIT said it is there
    finally:
        await store.close()


async def test_an_unreplicated_label_is_refused_and_its_retry_waits_for_the_first_entry(
    primary_and_replica: tuple[PrivateRedis, PrivateRedis],
) -> None:
    """The replica sleeps: the label is appended but refused (503, retry hint). A retry through a fresh
    connection (no write of its own yet, so a bare WAIT would count the replica at once) answers the
    first entry and is refused too, until the replica has that entry; then it is acknowledged once."""
    primary, replica = primary_and_replica
    first, retrying = durable_store(primary.url), durable_store(primary.url)
    try:
        await new_model(first)
        item = pending("m", 1)
        await first.put_pending("m", 1, [item], ttl_seconds=60)
        sleeper = sleep_in_background(replica.port, 1.5)
        with pytest.raises(StoreUnavailable, match="received by 0 of 1 replicas") as refused:
            await label(first, [(item.prediction_id, 1)])
        assert refused.value.retry_after > 0
        with pytest.raises(StoreUnavailable, match="received by 0 of 1 replicas"):
            await label(retrying, [(item.prediction_id, 1)])
        sleeper.join()
        [outcome] = await label(retrying, [(item.prediction_id, 1)])
        assert (outcome.status, outcome.seq) == ("duplicate", 1)
        with redis.Redis(port=primary.port) as client:
            assert client.xlen(GenerationKeys("m", 1).log) == 1
    finally:
        await first.close()
        await retrying.close()


async def test_appended_examples_and_events_wait_too(
    primary_and_replica: tuple[PrivateRedis, PrivateRedis],
) -> None:
    primary, replica = primary_and_replica
    store = durable_store(primary.url)
    try:
        await new_model(store)
        sleeper = sleep_in_background(replica.port, 1.0)
        with pytest.raises(StoreUnavailable):
            await store.append_event("m", 1, "migration", b"{}", "request-1", time.time())
        sleeper.join()
        appended, new = await store.append_event("m", 1, "migration", b"{}", "request-1", time.time())
        assert (appended.seq, new) == (1, False)  # the first try's entry, confirmed now
    finally:
        await store.close()


# -- Redis Cluster ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def replicated_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterProcesses]:
    """3 masters, each with a replica."""
    cluster = RedisClusterProcesses(tmp_path_factory.mktemp("replicated-cluster"), replicas=1)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
async def cluster_store(replicated_cluster: RedisClusterProcesses) -> AsyncIterator[RedisModelStore]:
    for port in replicated_cluster.ports:
        if replicated_cluster.role(port) == "master":
            with redis.Redis(port=port) as node:
                node.flushall()
    store = durable_store(replicated_cluster.url)
    yield store
    await store.close()


@pytest.mark.parametrize("model", ["m", "another", "third-model"])
async def test_on_a_cluster_the_wait_counts_the_replica_of_the_models_primary(
    replicated_cluster: RedisClusterProcesses, cluster_store: RedisModelStore, model: str
) -> None:
    # A healthy replica: a timeout far above a loaded machine's replication delay (0.3 s failed once
    # in a full run on 2 busy cores); the lagging-replica tests keep WAIT_ONE's short one.
    await cluster_store.close()
    store = durable_store(replicated_cluster.url, Durability(replicas=1, timeout_seconds=5.0))
    try:
        await new_model(store, model)
        item = pending(model, 1)
        await store.put_pending(model, 1, [item], ttl_seconds=60)
        [outcome] = await label(store, [(item.prediction_id, -1)], model=model)
    finally:
        await store.close()
    assert outcome.status == "appended"
    log = GenerationKeys(model, 1).log
    replica = replicated_cluster.replica_of(replicated_cluster.node_of(log))
    with redis.Redis(port=replica) as client:
        client.execute_command("READONLY")
        assert client.xlen(log) == 1


async def test_on_a_cluster_a_lagging_replica_means_503_and_a_retry_counts_once(
    replicated_cluster: RedisClusterProcesses, cluster_store: RedisModelStore
) -> None:
    await new_model(cluster_store)
    items = [pending("m", 1, seed) for seed in range(2)]
    await cluster_store.put_pending("m", 1, items, ttl_seconds=60)
    replica = replicated_cluster.replica_of(replicated_cluster.node_of(GenerationKeys("m", 1).log))
    sleeper = sleep_in_background(replica, 1.0)
    with pytest.raises(StoreUnavailable, match="received by 0 of 1 replicas"):
        await label(cluster_store, [(p.prediction_id, 1) for p in items])
    sleeper.join()
    outcomes = await label(cluster_store, [(p.prediction_id, 1) for p in items])
    assert [(o.status, o.seq) for o in outcomes] == [("duplicate", 1), ("duplicate", 2)]


async def test_waitaof_is_refused_at_start_on_a_server_older_than_7_2(
    replicated_cluster: RedisClusterProcesses,
) -> None:
    with redis.Redis(port=replicated_cluster.ports[0]) as node:
        version = str(node.info("server")["redis_version"])
    if tuple(int(v) for v in version.split(".")[:2]) >= (7, 2):
        pytest.skip(f"this Redis ({version}) has WAITAOF")
    store = durable_store(replicated_cluster.url, Durability(replicas=1, aof_local=True))
    try:
        with pytest.raises(StoreError, match=r"WAITAOF .* needs Redis 7\.2"):
            await store.check_durability()
    finally:
        await store.close()
    store = durable_store(replicated_cluster.url)
    try:
        await store.check_durability()  # WAIT alone is fine on a cluster now
    finally:
        await store.close()
