"""The redis-py asyncio client the store uses, and how Redis failures become store errors.

The client comes from a URL (``redis://``, ``rediss://``, ``unix://``; credentials and
db number in the URL) with bounded socket timeouts and a short retry on connection
errors. redis-py reconnects by itself once Redis is back, so one client outlives outages.
Retries are safe because every multi-step write is a Lua script that is idempotent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import (
    ClusterDownError,
    ConnectionError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisError,
    ResponseError,
    TimeoutError,
    TryAgainError,
)

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


def connect(url: str, settings: ConnectionSettings | None = None) -> aioredis.Redis:
    """An asyncio Redis client for ``url``; it connects lazily, on first use."""
    settings = settings or ConnectionSettings()
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=settings.max_connections,
        timeout=settings.socket_timeout,
        socket_timeout=settings.socket_timeout,
        socket_connect_timeout=settings.connect_timeout,
        retry=Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), settings.retries),
        health_check_interval=30,
        decode_responses=False,
    )
    return aioredis.Redis.from_pool(pool)


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
    ) as exc:
        raise StoreUnavailable(f"Redis unavailable during {action}: {exc}") from exc
    except ResponseError as exc:
        if str(exc).startswith(_UNAVAILABLE_REPLIES):
            raise StoreUnavailable(f"Redis cannot serve {action}: {exc}") from exc
        raise StoreError(f"Redis refused {action}: {exc}") from exc
    except RedisError as exc:
        raise StoreError(f"Redis error during {action}: {exc}") from exc
