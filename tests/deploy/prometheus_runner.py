"""Run a real Prometheus on loopback, wait for its targets to be scraped, query it.

Reusable by any test that wants to see its metrics through Prometheus itself::

    with serve_metrics(b'acog_weighted_sum{model="default"} 0.75\\n') as target, \\
            run_prometheus(scrape_config([target]), tmp_path) as prometheus:
        prometheus.wait_for_targets_up("acog")
        prometheus.wait_for('acog_weighted_sum{model="default"}')

To check the stack's own configuration against a running service, build the config with
:func:`project_config` (``docker/prometheus/prometheus.yml`` with ``api:8000`` replaced by
the service's address and faster intervals) and pass it to :func:`run_prometheus`.

Prometheus listens on ``127.0.0.1`` only and keeps its TSDB in the given directory. The
binary is ``$PROMETHEUS_BINARY``, else ``prometheus`` on PATH (Debian's ``prometheus``
package, installed by ``.ci/system-deps``).
"""

from __future__ import annotations

import copy
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from ..support.system_tools import missing_tool

ROOT = Path(__file__).resolve().parents[2]
PROJECT_CONFIG = ROOT / "docker" / "prometheus" / "prometheus.yml"
COMPOSE_API_TARGET = "api:8000"
EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class PrometheusError(RuntimeError):
    """Prometheus did not start, or did not answer as expected in time."""


def prometheus_binary() -> str:
    binary = os.environ.get("PROMETHEUS_BINARY") or shutil.which("prometheus") or "/usr/bin/prometheus"
    if not Path(binary).exists():
        missing_tool("prometheus", PrometheusError)
    return binary


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def scrape_config(
    targets: list[str],
    *,
    job: str = "acog",
    interval: str = "1s",
    metrics_path: str = "/metrics",
) -> dict[str, Any]:
    """A minimal Prometheus config scraping ``targets`` (``host:port``) every ``interval``."""
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {
                "job_name": job,
                "scrape_interval": interval,
                "scrape_timeout": interval,
                "metrics_path": metrics_path,
                "static_configs": [{"targets": list(targets)}],
            }
        ],
    }


def project_config(
    target: str,
    *,
    interval: str | None = "1s",
    source: Path = PROJECT_CONFIG,
) -> dict[str, Any]:
    """The stack's Prometheus config, scraping ``target`` instead of the compose ``api:8000``.

    Rule files become absolute paths next to ``source``; with ``interval`` set, every scrape
    and evaluation interval is shortened to it so that a test sees samples within seconds.
    Other jobs (Prometheus scraping itself) are dropped.
    """
    config: dict[str, Any] = copy.deepcopy(yaml.safe_load(source.read_text()))
    config["rule_files"] = [str((source.parent / rule).resolve()) for rule in config.get("rule_files", [])]
    jobs = [job for job in config["scrape_configs"] if _targets(job) and COMPOSE_API_TARGET in _targets(job)]
    if not jobs:
        raise PrometheusError(f"{source} has no job scraping {COMPOSE_API_TARGET}")
    for job in jobs:
        for static in job["static_configs"]:
            static["targets"] = [target if t == COMPOSE_API_TARGET else t for t in static["targets"]]
        if interval:
            job["scrape_interval"] = interval
            job["scrape_timeout"] = interval
    config["scrape_configs"] = jobs
    if interval:
        config.setdefault("global", {}).update(scrape_interval=interval, evaluation_interval=interval)
    return config


def _targets(job: dict[str, Any]) -> list[str]:
    return [t for static in job.get("static_configs", []) for t in static.get("targets", [])]


class Prometheus:
    """A running Prometheus server and a small client for its HTTP API."""

    def __init__(self, url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
        self.url = url
        self.process = process
        self.log_path = log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def api(self, path: str, **params: str) -> Any:
        """``GET /api/v1/<path>``; the ``data`` of a successful answer."""
        query = urllib.parse.urlencode(params)
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read() or b"{}")
            raise PrometheusError(f"GET {url}: HTTP {exc.code}: {body.get('error', body)}") from exc
        if body.get("status") != "success":
            raise PrometheusError(f"GET {url}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query; the result vector (a scalar becomes a one-element list)."""
        data = self.api("query", query=expr)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def targets(self) -> list[dict[str, Any]]:
        active: list[dict[str, Any]] = self.api("targets", state="active")["activeTargets"]
        return active

    def rule_groups(self) -> list[dict[str, Any]]:
        groups: list[dict[str, Any]] = self.api("rules")["groups"]
        return groups

    def wait_for_rule_evaluation(self, timeout: float = 20.0) -> list[dict[str, Any]]:
        """Wait until every loaded rule has been evaluated once; the rule groups."""

        def evaluated() -> list[dict[str, Any]] | None:
            groups = self.rule_groups()
            rules = [rule for group in groups for rule in group["rules"]]
            return (
                groups if rules and all(r.get("lastEvaluation", "").startswith("2") for r in rules) else None
            )

        return self.wait_until(evaluated, timeout, lambda: f"every rule evaluated: {self.rule_groups()}")

    def wait_for_targets_up(self, job: str | None = None, timeout: float = 20.0) -> list[dict[str, Any]]:
        """Wait until every active target (of ``job``) has been scraped successfully."""

        def up() -> list[dict[str, Any]] | None:
            targets = [t for t in self.targets() if job is None or t["labels"].get("job") == job]
            return targets if targets and all(t["health"] == "up" for t in targets) else None

        return self.wait_until(up, timeout, lambda: f"targets of job {job!r} up: {self.targets()}")

    def wait_for(
        self, expr: str, timeout: float = 20.0, predicate: Callable[[list[dict[str, Any]]], bool] = bool
    ) -> list[dict[str, Any]]:
        """Wait until ``expr`` returns a result that satisfies ``predicate`` (default: non-empty)."""

        def ready() -> list[dict[str, Any]] | None:
            result = self.query(expr)
            return result if predicate(result) else None

        return self.wait_until(ready, timeout, lambda: f"{expr} -> {self.query(expr)}")

    def wait_until(self, probe: Callable[[], Any], timeout: float, describe: Callable[[], str]) -> Any:
        """Call ``probe`` until it returns something other than None; fail if Prometheus dies."""
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            found = probe()
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise PrometheusError(f"timed out after {timeout} s waiting for {describe()}")
            time.sleep(0.2)

    def _check_alive(self) -> None:
        if self.process.poll() is not None:
            raise PrometheusError(f"prometheus exited with {self.process.returncode}:\n{self.log()}")


@contextmanager
def run_prometheus(
    config: dict[str, Any],
    workdir: Path,
    *,
    startup_timeout: float = 20.0,
    extra_args: tuple[str, ...] = (),
) -> Iterator[Prometheus]:
    """Start Prometheus with ``config`` on a free loopback port; stop it on exit."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    log_path = workdir / "prometheus.log"
    for attempt in range(3):  # the free port may be taken before Prometheus binds it
        port = free_port()
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [
                    prometheus_binary(),
                    f"--config.file={config_path}",
                    f"--storage.tsdb.path={workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                    "--web.enable-lifecycle",
                    "--log.level=info",
                    *extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
            )
        prometheus = Prometheus(f"http://127.0.0.1:{port}", process, log_path)
        try:
            _wait_ready(prometheus, startup_timeout)
        except PrometheusError:
            _stop(process)
            if "address already in use" in prometheus.log() and attempt < 2:
                continue
            raise
        try:
            yield prometheus
        finally:
            _stop(process)
        return


def _wait_ready(prometheus: Prometheus, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        prometheus._check_alive()
        try:
            with urllib.request.urlopen(f"{prometheus.url}/-/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise PrometheusError(f"prometheus not ready after {timeout} s:\n{prometheus.log()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def serve_metrics(body: bytes | Callable[[str], tuple[bytes, str]]) -> Iterator[str]:
    """Serve ``/metrics`` on loopback; yields the ``host:port`` target (other paths answer 404).

    ``body`` is a static exposition in the Prometheus text format, or a callable that takes
    the scrape's ``Accept`` header and returns ``(payload, content type)`` on each scrape.
    """

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self.send_error(404)
                return
            if callable(body):
                payload, content_type = body(self.headers.get("Accept", ""))
            else:
                payload, content_type = body, EXPOSITION_CONTENT_TYPE
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="metrics-server", daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"{host.decode() if isinstance(host, bytes) else host}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
