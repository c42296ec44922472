"""The scripts the image runs, run here: the health check and the build-time warm-up."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .prometheus_runner import free_port

ROOT = Path(__file__).resolve().parents[2]
HEALTHCHECK = ROOT / "docker" / "healthcheck.py"
WARMUP = ROOT / "docker" / "warmup.py"


@contextmanager
def health_server(status: int) -> Iterator[int]:
    """A loopback server answering ``status`` on /healthz and 404 elsewhere; yields its port."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status if self.path == "/healthz" else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def run_healthcheck(port: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ACOG_PORT": str(port)}
    return subprocess.run(
        [sys.executable, str(HEALTHCHECK)], env=env, capture_output=True, text=True, timeout=30
    )


def test_healthcheck_passes_when_healthz_answers_200() -> None:
    with health_server(200) as port:
        assert run_healthcheck(port).returncode == 0


def test_healthcheck_fails_when_healthz_answers_an_error() -> None:
    with health_server(503) as port:
        result = run_healthcheck(port)
    assert result.returncode == 1
    assert "503" in result.stderr


def test_healthcheck_fails_when_nothing_listens() -> None:
    assert run_healthcheck(free_port()).returncode == 1


def run_warmup(
    *packages: str, cache_dir: Path, pythonpath: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [sys.executable, str(WARMUP), *packages],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # every learner compiles from scratch: ~52 s of CPU with sdrogd, more when shared
        cwd=ROOT,
    )


def test_warmup_writes_numba_cache_to_the_configured_directory(tmp_path: Path) -> None:
    package = tmp_path / "src" / "jitpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "kernels.py").write_text(
        textwrap.dedent("""
        import numba

        @numba.njit(cache=True)
        def dot(n):
            total = 0.0
            for i in range(n):
                total += i * 0.5
            return total

        dot(3)  # compiled at import, as the learners do
    """)
    )
    cache = tmp_path / "numba-cache"
    result = run_warmup("jitpkg", cache_dir=cache, pythonpath=tmp_path / "src")
    assert result.returncode == 0, result.stderr
    assert "imported 2 modules" in result.stdout
    cached = [p.name for p in cache.rglob("*") if p.is_file()]
    assert any(name.endswith(".nbi") for name in cached), cached
    assert any(name.endswith(".nbc") for name in cached), cached


def test_warmup_fails_when_a_module_does_not_import(tmp_path: Path) -> None:
    package = tmp_path / "src" / "brokenpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "bad.py").write_text("import no_such_module_anywhere\n")
    result = run_warmup("brokenpkg", cache_dir=tmp_path / "cache", pythonpath=tmp_path / "src")
    assert result.returncode == 1
    assert "no_such_module_anywhere" in result.stderr


def test_warmup_fails_when_the_cache_directory_is_not_writable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run_warmup("json", cache_dir=blocker / "cache")  # a path under a file: never writable
    assert result.returncode == 1
    assert "NUMBA_CACHE_DIR" in result.stderr


def test_warmup_imports_the_project_packages(tmp_path: Path) -> None:
    """What the image build runs: every module of service and model_store imports."""
    result = run_warmup(cache_dir=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    assert "from service, model_store" in result.stdout
