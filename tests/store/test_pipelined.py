"""The pipelined connection of the hot writes (``model_store.pipelined``), on real redis-servers: the
store's pending writes and label appends go through it and answer what the redis-py client answers;
many calls share its one connection; whatever it cannot do (a flushed script cache, a restart, a
refused handshake, a cluster node that no longer holds the slot) the client does, so no call fails
that the client would have served; a server that does not answer is refused after the socket
timeout, as the client's own attempt would be."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import redis
from redis.asyncio.cluster import RedisCluster

from model_store import (
    ConnectionSettings,
    EmbeddedRedis,
    PendingLimitExceeded,
    RedisModelStore,
    StoreUnavailable,
)
from model_store.connection import connect
from model_store.keys import GenerationKeys
from model_store.pipelined import FALLBACK, PipelinedNodes, PipelinedScripts, pipelined_for

from ..support.private_redis import PrivateRedis
from ..support.redis_cluster import RedisClusterProcesses
from .conftest import flush_cluster
from .factories import WINDOW, label, new_model, pending

pytestmark = pytest.mark.anyio

FAST = ConnectionSettings(socket_timeout=0.5, connect_timeout=0.5, retries=1)


class Counting:
    """Wraps a store's redis-py script object: counts the calls that went through the client."""

    def __init__(self, script: Any) -> None:
        self.script = script
        self.sha = script.sha
        self.calls = 0

    async def __call__(self, **kwargs: Any) -> Any:
        self.calls += 1
        return await self.script(**kwargs)


def count_client_calls(store: RedisModelStore) -> dict[str, Counting]:
    counters = {name: Counting(getattr(store, name)) for name in ("_put_pending", "_label")}
    for name, counter in counters.items():
        setattr(store, name, counter)
    return counters


def clients_running(server: redis.Redis, command: str) -> int:
    """Connections whose last command was ``command``."""
    return sum(1 for c in server.client_list() if c["cmd"] == command)


@pytest.mark.parametrize("protocol", [2, 3])
async def test_hot_writes_take_the_pipelined_connection_and_answer_as_the_client(
    private_redis: PrivateRedis, protocol: int
) -> None:
    """Both RESP versions: pending writes, a refused pending write and label outcomes (appended,
    duplicate, unknown) are the same values through either path."""
    answers: dict[bool, list[Any]] = {}
    for pipelined in (True, False):
        client = connect(f"{private_redis.url}?protocol={protocol}")
        store = RedisModelStore(client, pipelined=pipelined)
        counters = count_client_calls(store)
        model = f"m{int(pipelined)}"
        try:
            await new_model(store, model)
            items = [pending(model, 1, seed) for seed in range(3)]
            await store.put_pending(model, 1, items[:2], ttl_seconds=WINDOW)
            with pytest.raises(PendingLimitExceeded) as refused:
                await store.put_pending(model, 1, items[2:], ttl_seconds=WINDOW, max_pending=2)
            pairs = [(items[0].prediction_id, 1), (items[1].prediction_id, -1)]
            outcomes = await label(store, pairs, model)
            again = await label(store, [(items[0].prediction_id, -1), (items[2].prediction_id, 1)], model)
            answers[pipelined] = [
                str(refused.value),
                *[(o.status, o.seq, o.first_y) for o in outcomes + again],
            ]
        finally:
            await store.close()
        expected_client_calls = 1 if pipelined else 2  # the first call of a script loads it (NOSCRIPT)
        assert counters["_put_pending"].calls == expected_client_calls
        assert counters["_label"].calls == expected_client_calls
    assert answers[True] == answers[False]
    assert answers[True][1:] == [
        ("appended", 1, 1),
        ("appended", 2, -1),
        ("conflict", 1, 1),
        ("unknown", None, None),
    ]


async def test_concurrent_writes_share_one_connection(private_redis: PrivateRedis) -> None:
    store = RedisModelStore.from_url(private_redis.url, FAST)
    counters = count_client_calls(store)
    server = redis.Redis(port=private_redis.port)
    try:
        await new_model(store)
        items = [pending("m", 1, seed) for seed in range(301)]
        await store.put_pending("m", 1, items[:1], ttl_seconds=WINDOW)  # loads the script
        await asyncio.gather(*(store.put_pending("m", 1, [item], ttl_seconds=WINDOW) for item in items[1:]))
        assert await store.count_pending("m", 1, time.time()) == 301
        assert counters["_put_pending"].calls == 1
        assert clients_running(server, "evalsha") == 1
    finally:
        server.close()
        await store.close()


async def test_a_cancelled_call_leaves_the_replies_in_order(private_redis: PrivateRedis) -> None:
    """A caller that gives up mid-call (a request cancelled) does not shift the replies of the calls
    after it: its reply is read and dropped."""
    store = RedisModelStore.from_url(private_redis.url, FAST)
    try:
        await new_model(store)
        items = [pending("m", 1, seed) for seed in range(4)]
        await store.put_pending("m", 1, items, ttl_seconds=WINDOW)
        doomed = asyncio.ensure_future(label(store, [(items[0].prediction_id, 1)]))
        await asyncio.sleep(0)
        doomed.cancel()
        outcomes = await asyncio.gather(*(label(store, [(item.prediction_id, -1)]) for item in items[1:]))
        assert [o.prediction_id for (o,) in outcomes] == [str(item.prediction_id) for item in items[1:]]
        assert all(o.status == "appended" for (o,) in outcomes)
    finally:
        await store.close()


async def test_a_close_while_connecting_keeps_no_connection() -> None:
    """A store closed while its pipelined connection is still connecting (a server that accepted it
    and has not answered the handshake yet) closes that socket too: the call falls back, and the
    server sees the connection end."""
    loop = asyncio.get_running_loop()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        scripts = PipelinedScripts(port=listener.getsockname()[1], protocol=3, connect_timeout=5.0)
        call = asyncio.ensure_future(scripts.evalsha("0" * 40, [], []))
        accepted, _ = await asyncio.wait_for(loop.sock_accept(listener), 5)
        with accepted:
            hello = await asyncio.wait_for(loop.sock_recv(accepted, 1024), 5)
            assert hello.startswith(b"*2\r\n$5\r\nHELLO")
            scripts.close()
            assert await asyncio.wait_for(call, 1) is FALLBACK
            assert await asyncio.wait_for(loop.sock_recv(accepted, 1024), 1) == b""  # closed by us


async def test_a_flushed_script_cache_and_a_restart_fall_back_to_the_client(
    private_redis: PrivateRedis,
) -> None:
    store = RedisModelStore.from_url(private_redis.url, FAST)
    counters = count_client_calls(store)
    try:
        await new_model(store)
        first, second, third = (pending("m", 1, seed) for seed in range(3))
        await store.put_pending("m", 1, [first], ttl_seconds=WINDOW)  # loads the script
        await store.put_pending("m", 1, [first], ttl_seconds=WINDOW)
        assert counters["_put_pending"].calls == 1
        with redis.Redis(port=private_redis.port) as server:
            server.script_flush()
        await store.put_pending("m", 1, [second], ttl_seconds=WINDOW)  # NOSCRIPT: the client loads it
        assert counters["_put_pending"].calls == 2
        await store.put_pending("m", 1, [third], ttl_seconds=WINDOW)  # loaded again: pipelined
        assert counters["_put_pending"].calls == 2

        private_redis.terminate()
        private_redis.start()  # the pipelined connection is gone (the scripts too)
        (outcome,) = await label(store, [(first.prediction_id, 1)])
        assert outcome.status == "appended"
        assert counters["_label"].calls == 1  # the lost connection or NOSCRIPT: the client's call
        (outcome,) = await label(store, [(second.prediction_id, 1)])
        assert (outcome.status, outcome.seq) == ("appended", 2)
        assert counters["_label"].calls == 1  # a new pipelined connection took it
    finally:
        await store.close()


async def test_a_stalled_server_is_unavailable_after_the_socket_timeout(private_redis: PrivateRedis) -> None:
    """A reply later than the socket timeout closes the pipelined connection and the call is refused
    as the client's own timed-out attempt would be; it is not asked again through the client, so a
    request waits for a Redis that does not answer no longer than the client's attempts allow."""
    store = RedisModelStore.from_url(private_redis.url, ConnectionSettings(socket_timeout=0.3, retries=1))
    counters = count_client_calls(store)
    try:
        await new_model(store)
        await store.put_pending("m", 1, [pending("m", 1, 1)], ttl_seconds=WINDOW)  # loads the script
        with redis.Redis(port=private_redis.port) as server:
            sleeper = threading.Thread(target=server.execute_command, args=("DEBUG", "SLEEP", "0.8"))
            sleeper.start()
            await asyncio.sleep(0.1)
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="Timeout"):
                await store.put_pending("m", 1, [pending("m", 1, 0)], ttl_seconds=WINDOW)
            took = time.monotonic() - started
            sleeper.join(5)
        assert 0.3 <= took < 0.6
        assert counters["_put_pending"].calls == 1
        await store.put_pending("m", 1, [pending("m", 1, 2)], ttl_seconds=WINDOW)  # a new connection
        assert counters["_put_pending"].calls == 1
    finally:
        await store.close()


async def test_credentials_and_database_of_the_url(tmp_path: Path) -> None:
    """A password and a database number in the URL: the pipelined connection authenticates and
    selects as the client does; a wrong password is the client's error to report."""
    server = PrivateRedis(tmp_path, password="s3cret")
    server.start()
    try:
        url = server.url.removesuffix("/0")
        store = RedisModelStore.from_url(f"{url}/3", FAST)
        counters = count_client_calls(store)
        try:
            await new_model(store)
            for seed in range(3):
                await store.put_pending("m", 1, [pending("m", 1, seed)], ttl_seconds=WINDOW)
            assert counters["_put_pending"].calls == 1  # the first loads the script
        finally:
            await store.close()
        with redis.Redis(port=server.port, password="s3cret", db=3) as sync:
            assert sync.dbsize() > 0
        wrong = pipelined_for(connect(f"redis://:wrong@127.0.0.1:{server.port}/3"))
        assert wrong is not None
        assert await wrong.evalsha("0" * 40, [], []) is FALLBACK
        wrong.close()
    finally:
        server.close()


async def test_the_embedded_redis_unix_socket(tmp_path: Path) -> None:
    """The embedded Redis (what ``acog serve`` runs on without a URL) is reached over a Unix socket."""
    with EmbeddedRedis(tmp_path / "data") as server:
        store = RedisModelStore.from_url(server.url, FAST)
        counters = count_client_calls(store)
        try:
            await new_model(store)
            items = [pending("m", 1, seed) for seed in range(3)]
            for item in items:
                await store.put_pending("m", 1, [item], ttl_seconds=WINDOW)
            outcomes = await label(store, [(item.prediction_id, 1) for item in items])
            (again,) = await label(store, [(items[0].prediction_id, 1)])
        finally:
            await store.close()
    assert [o.status for o in outcomes] == ["appended"] * 3 and again.status == "duplicate"
    assert (counters["_put_pending"].calls, counters["_label"].calls) == (1, 1)  # each script's first call


async def test_a_cluster_writes_each_model_through_its_primary(redis_cluster: RedisClusterProcesses) -> None:
    """On a Redis Cluster each call goes to the primary of its model's slot; a node that does not hold
    the slot answers MOVED, and the client makes that call (following the redirection)."""
    flush_cluster(redis_cluster)
    store = RedisModelStore.from_url(redis_cluster.url, FAST)
    counters = count_client_calls(store)
    try:
        names = [f"m{i}" for i in range(6)]  # spread over the shards
        for name in names:
            await new_model(store, name)
            for seed in range(3):
                await store.put_pending(name, 1, [pending(name, 1, seed)], ttl_seconds=WINDOW)
        nodes = {redis_cluster.node_of(GenerationKeys(name, 1).pending_index) for name in names}
        assert len(nodes) > 1
        # each shard's first call of the script loads it there (NOSCRIPT); every other call is pipelined
        assert counters["_put_pending"].calls <= len(nodes)
        before = counters["_put_pending"].calls

        cluster = store._redis
        assert isinstance(cluster, RedisCluster)
        right = cluster.get_node_from_key(GenerationKeys("m0", 1).pending_index)
        assert right is not None
        wrong = next(node for node in cluster.get_primaries() if node.port != right.port)
        with patch.object(cluster, "get_node_from_key", return_value=wrong):
            await store.put_pending("m0", 1, [pending("m0", 1, 7)], ttl_seconds=WINDOW)  # MOVED
        assert counters["_put_pending"].calls == before + 1
        await store.put_pending("m0", 1, [pending("m0", 1, 8)], ttl_seconds=WINDOW)
        assert counters["_put_pending"].calls == before + 1
        assert await store.count_pending("m0", 1, time.time()) == 5
    finally:
        await store.close()
        flush_cluster(redis_cluster)


def test_which_clients_get_pipelined_connections() -> None:
    assert isinstance(pipelined_for(connect("redis://127.0.0.1:6379/0")), PipelinedScripts)
    assert isinstance(pipelined_for(connect("unix:///tmp/redis.sock?db=2")), PipelinedScripts)
    assert isinstance(pipelined_for(connect("redis+cluster://127.0.0.1:7000")), PipelinedNodes)
    assert pipelined_for(connect("rediss://127.0.0.1:6379/0")) is None
    assert pipelined_for(connect("rediss+cluster://127.0.0.1:7000")) is None
