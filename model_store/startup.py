"""``open_store``: the store the service runs on, external Redis or embedded."""

from __future__ import annotations

from pathlib import Path

from .connection import ConnectionSettings
from .embedded import EmbeddedRedis
from .protocol import ModelStore
from .redis_store import RedisModelStore


def open_store(
    url: str | None, data_dir: Path, settings: ConnectionSettings | None = None
) -> tuple[ModelStore, EmbeddedRedis | None]:
    """The store on ``url``, or, when ``url`` is None or empty, on a private Redis in ``data_dir``.

    Returns the store and the embedded server, if one was started. Nothing is contacted
    yet for an external Redis (a down Redis shows in ``ping``); starting the embedded one
    blocks until it serves. Shut down in reverse: ``await store.close()``, then
    ``embedded.close()``.
    """
    if url:
        return RedisModelStore.from_url(url, settings), None
    embedded = EmbeddedRedis(data_dir)
    return RedisModelStore.from_url(embedded.url, settings), embedded
