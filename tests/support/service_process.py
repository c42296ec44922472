"""The real service, as a subprocess (``python -m service.cli serve``) on a free port.

End-to-end and crash tests drive it over HTTP and WebSocket like any client, and may
SIGKILL or SIGTERM it at any point. Its log goes to a file in the test's directory and is
attached to the failure message when it does not come up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from .private_redis import free_port

ROOT = Path(__file__).resolve().parents[2]


class ServiceProcess:
    """``start()`` waits until ``/readyz`` answers 200; ``kill()`` is SIGKILL, ``stop()`` SIGTERM."""

    def __init__(
        self, directory: Path, env: Mapping[str, str], port: int | None = None, args: Sequence[str] = ()
    ) -> None:
        self.directory = directory
        self.args = list(args)
        """More ``acog serve`` options (``--server granian``)."""
        self.port = port or free_port()
        self.env = {**os.environ, "ACOG_DATA_DIR": str(directory / "data"), **env}
        self.env.setdefault("PYTHONPATH", str(ROOT))
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = directory / f"service-{self.port}.log"
        self.starts = 0
        self.listening: float | None = None
        """``time.perf_counter()`` when the last start first answered HTTP (``/readyz``, any status)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self, timeout: float = 60.0) -> None:
        self.starts += 1
        self.listening = None
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service.cli",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *self.args,
            ],
            env=self.env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the service exited with {self.process.returncode}:\n{self.log()}")
            try:
                status = httpx.get(f"{self.url}/readyz", timeout=1.0).status_code
                if self.listening is None:
                    self.listening = time.perf_counter()  # it answers, ready or not
                if status == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"the service did not become ready in {timeout} s:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, like a crash."""
        self._signal(signal.SIGKILL)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM: the clean shutdown (checkpoints every model). Returns the exit code."""
        return self._signal(signal.SIGTERM, timeout)

    def _signal(self, sig: int, timeout: float = 10.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout)
        self.process = None
        return code

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except FileNotFoundError:
            return "(no log)"

    def writing_checkpoint(self) -> bool:
        """Whether the running process's last checkpoint line says it started writing one and has
        not finished. The log file is shared by every start, and a process killed inside a write
        left "writing" as its last line: only the running process's lines (``[pid]:``) count."""
        process = self.process
        if process is None:
            return False
        tag = f"[{process.pid}]:"
        lines = [line for line in self.log().splitlines() if tag in line and "checkpoint at version" in line]
        return bool(lines) and "writing checkpoint" in lines[-1]
