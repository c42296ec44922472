"""The redis-py asyncio clients the store uses, and how Redis failures become store errors.

A client comes from a URL (``redis://``, ``rediss://``, ``unix://``; credentials and db
number in the URL) with bounded socket timeouts and a short retry on connection errors.
redis-py reconnects by itself once Redis is back, so one client outlives outages. Retries
are safe because every multi-step write is a Lua script that is idempotent.

**Redis Cluster** is chosen by the URL scheme ``redis+cluster://`` (``rediss+cluster://``
with TLS) or by ``ConnectionSettings.cluster``: the client is then redis-py's
:class:`~redis.asyncio.cluster.RedisCluster`, which discovers the shards from the node it is
given, routes every command by its key's hash slot and follows ``MOVED``/``ASK`` and
failovers. Every script's keys share one hash tag, so each runs on one shard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import (
    ClusterDownError,
    ConnectionError,
    MovedError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
    ResponseError,
    TimeoutError,
    TryAgainError,
)

from .durability import Durability
from .protocol import StoreError, StoreUnavailable

# Error replies that mean "this server cannot serve now" rather than "bad request".
_UNAVAILABLE_REPLIES = (
    "LOADING",
    "BUSY",
    "MISCONF",
    "MASTERDOWN",
    "NOREPLICAS",
    "READONLY",
    "OOM",
    "CLUSTERDOWN",
    "TRYAGAIN",
)


def _unavailable(reply: str) -> bool:
    """Whether an error reply says the server cannot serve now, also when a script relays it
    (``Error running script (...): @user_script:4: -MISCONF ...``)."""
    if reply.startswith(_UNAVAILABLE_REPLIES):
        return True
    relayed = reply.rpartition(": -")[2] if "@user_script" in reply else ""
    return relayed.startswith(_UNAVAILABLE_REPLIES)


DEFAULT_CHECKPOINT_CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """Socket timeouts (seconds) and retries for the store's Redis client."""

    socket_timeout: float = 5.0
    connect_timeout: float = 2.0
    retries: int = 2
    max_connections: int = 64
    """Callers beyond this many concurrent commands wait (up to ``socket_timeout``) for a connection."""
    checkpoint_chunk_bytes: int = DEFAULT_CHECKPOINT_CHUNK_BYTES
    """A checkpoint blob goes to Redis in commands of at most this many bytes (see ``RedisModelStore``)."""
    cluster: bool = False
    """Talk to a Redis Cluster (also chosen by a ``redis+cluster://`` URL)."""
    durability: Durability = field(default_factory=Durability)
    """Opt-in WAIT/WAITAOF after every append (see :mod:`model_store.durability`)."""


CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}

Client = aioredis.Redis | RedisCluster
"""A single Redis or a Redis Cluster; the store uses only commands both route the same way."""


def is_cluster(url: str, settings: ConnectionSettings) -> bool:
    return settings.cluster or url.split("://", 1)[0] in CLUSTER_SCHEMES


def connect(
    url: str, settings: ConnectionSettings | None = None, *, max_connections: int | None = None
) -> Client:
    """An asyncio client for ``url`` (a cluster client when :func:`is_cluster`); it connects lazily,
    on first use (a cluster client discovers the shards then)."""
    settings = settings or ConnectionSettings()
    retry = Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), settings.retries)
    if is_cluster(url, settings):
        scheme, rest = url.split("://", 1)
        return RedisCluster.from_url(
            f"{CLUSTER_SCHEMES.get(scheme, scheme)}://{rest}",
            socket_timeout=settings.socket_timeout,
            socket_connect_timeout=settings.connect_timeout,
            retry=retry,
            max_connections=max_connections or 2**31,
            decode_responses=False,
        )
    pool: aioredis.BlockingConnectionPool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections or settings.max_connections,
        timeout=settings.socket_timeout,
        socket_timeout=settings.socket_timeout,
        socket_connect_timeout=settings.connect_timeout,
        retry=retry,
        health_check_interval=30,
        decode_responses=False,
    )
    pool.connection_class = packed_by_hiredis(pool.connection_class)
    return aioredis.Redis.from_pool(pool)


class HiredisPacking:
    """A redis-py asyncio connection whose commands are packed by ``hiredis.pack_command`` (C)
    instead of redis-py's asyncio packer (Python, one ``join`` per argument), the bytes on the wire
    the same: what redis-py's synchronous client does when hiredis is installed.

    The first argument is split on spaces as redis-py splits it (``"CLIENT SETNAME"``); an argument
    hiredis does not take (a ``bool``, any type redis-py's encoder refuses) goes to redis-py's own
    packer, which refuses it with redis-py's error. The store's pending writes and label appends
    pass several arguments per prediction or label, so their packing is per-item work on the hot
    paths. A cluster client keeps redis-py's packer: ``RedisCluster`` takes no connection class."""

    def pack_command(self, *args: Any) -> list[bytes]:
        first = args[0]
        if isinstance(first, str):
            head: tuple[Any, ...] = tuple(first.encode().split())
        elif b" " in first:
            head = tuple(first.split())
        else:
            head = (first,)
        try:
            return [hiredis.pack_command(head + args[1:])]
        except TypeError:
            return super().pack_command(*args)  # type: ignore[misc]


_PACKED: dict[type[Any], type[Any]] = {}


def packed_by_hiredis(connection_class: type[Any]) -> type[Any]:
    """``connection_class`` (TCP, TLS or Unix socket, as the URL chose it) with :class:`HiredisPacking`,
    one class per connection class."""
    if connection_class not in _PACKED:
        name = f"Hiredis{connection_class.__name__}"
        _PACKED[connection_class] = type(name, (HiredisPacking, connection_class), {})
    return _PACKED[connection_class]


NodeConnector = Callable[[str, int], aioredis.Redis]
"""A plain client of one cluster node, given its host and port."""


def node_connector(url: str, settings: ConnectionSettings | None = None) -> NodeConnector:
    """Plain clients of single nodes of the cluster at ``url``: the same credentials, TLS and settings,
    another host and port (what a durable append needs, to wait on the primary it wrote to)."""
    settings = replace(settings or ConnectionSettings(), cluster=False)
    scheme, rest = url.split("://", 1)
    parts = urlsplit(f"{CLUSTER_SCHEMES.get(scheme, scheme)}://{rest}")
    userinfo = parts.netloc.rpartition("@")[0]

    def connect_node(host: str, port: int) -> aioredis.Redis:
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        netloc = f"{userinfo}@{address}" if userinfo else address
        client = connect(urlunsplit(parts._replace(netloc=netloc)), settings)
        assert isinstance(client, aioredis.Redis)
        return client

    return connect_node


@contextmanager
def translate_redis_errors(action: str) -> Iterator[None]:
    """Re-raise redis-py errors as :class:`StoreUnavailable` (Redis cannot serve) or :class:`StoreError`."""
    try:
        yield
    except (
        ConnectionError,
        TimeoutError,
        ReadOnlyError,
        OutOfMemoryError,
        ClusterDownError,
        TryAgainError,
        MovedError,
        RedisClusterException,
    ) as exc:
        raise StoreUnavailable(f"Redis unavailable during {action}: {exc}") from exc
    except ResponseError as exc:
        if _unavailable(str(exc)):
            raise StoreUnavailable(f"Redis cannot serve {action}: {exc}") from exc
        raise StoreError(f"Redis refused {action}: {exc}") from exc
    except RedisError as exc:
        raise StoreError(f"Redis error during {action}: {exc}") from exc
