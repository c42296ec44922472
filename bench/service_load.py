"""Service load: requests/s and latency of the real service against a no-op FastAPI app.

    .venv/bin/python -m bench.service_load [--quick] [--repeats 3] [--servers uvicorn,granian]
                                           [--output docs/benchmarks.md]

Starts, on 127.0.0.1, a Redis server of its own (append-only, ``appendfsync everysec``),
the service (one process) and ``bench/noop_app.py`` (a FastAPI app whose ``POST /predict``,
``POST /feedback`` and ``WS /ws`` validate a pydantic model and answer JSON) on the same server,
uvicorn and, when it is installed, Granian. Load comes from separate processes: ``wrk`` (Debian;
``.ci/system-deps`` installs it) for closed-loop throughput, with a Lua script that stops after a
fixed number of requests, and ``bench/loadgen.py`` for open-loop latency at a fixed rate and for
the WebSocket.
Every count is bounded. The model is the service default (ACOG, eta auto, intercept) on a9a's
123 features; bodies are a9a rows as dense JSON lists.

Every figure is the median of ``--repeats`` runs with their min to max. The service and the
no-op are measured **alternately** within each repeat (service, no-op, service, no-op, ...), so
a change of the machine's load hits both, and the goal is on the ratio of each pair. Reported:
single /predict against the no-op on each server (goal >= 1.0), batch /predict, durable
/feedback one label per request (appended to the Redis log and learned before the reply; goal
>= 6,000 labels/s) and 100 per request, the WebSocket (goal >= 20,000 predictions/s), the same
single labels and WebSocket messages sent to the no-op app (the floor of those two goals), open-loop
latency at 2,000 predictions/s (goal p99 < 5 ms), memory per model and per pending
prediction, and py-spy profiles of where a single /predict and a single label spend their CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import httpx
import numpy as np
import redis

from bench import cpu_profile
from bench.service_load_report import report
from service.client import Client, Sparse
from service.datasets import load
from tests.support.private_redis import PrivateRedis, free_port
from tests.support.service_process import ROOT

WRK_SCRIPT = r"""
local bodies, count, limit = {}, 0, tonumber(os.getenv("WRK_LIMIT"))
local path, url = os.getenv("WRK_BODIES"), os.getenv("WRK_PATH")
function init(args)
  for line in io.lines(path) do bodies[#bodies + 1] = line end
end
function request()
  count = count + 1
  if count > limit then wrk.thread:stop() end
  return wrk.format("POST", url, {["Content-Type"] = "application/json"}, bodies[((count - 1) % #bodies) + 1])
end
function done(summary, latency, requests)
  io.write(string.format('{"requests": %d, "seconds": %.6f, "non2xx": %d, "errors": %d, ' ..
    '"p50": %.3f, "p90": %.3f, "p99": %.3f, "max": %.3f}\n',
    summary.requests, summary.duration / 1e6, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1e3, latency:percentile(90) / 1e3, latency:percentile(99) / 1e3,
    latency.max / 1e3))
end
"""


def with_cpu(
    pid: int, per: int, run: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any
) -> dict[str, Any]:
    """``run(*args, **kwargs)``'s result with ``cpu_us``: the CPU time process ``pid`` (its workers
    included) spent per item over the run, from /proc (``per`` items a request: a wrk result counts
    ``requests``, a load generator's ``count``); a core of its own would serve ``1e6 / cpu_us`` a
    second."""
    before = cpu_profile.cpu_seconds(pid)
    result = run(*args, **kwargs)
    items = per * int(result.get("requests", result.get("count", 0)))
    result["cpu_us"] = (cpu_profile.cpu_seconds(pid) - before) / max(1, items) * 1e6
    return result


class Bench:
    def __init__(
        self,
        workdir: Path,
        quick: bool,
        profile: bool = False,
        repeats: int = 3,
        servers: tuple[str, ...] = (),
    ) -> None:
        self.workdir = workdir
        self.quick = quick
        self.profile = profile
        self.repeats = repeats
        self.pairs_only = False
        self.servers = servers or ("uvicorn",)
        self.scale = 0.25 if quick else 1.0
        self.seconds = 3.0 if quick else 8.0
        self.results: dict[str, Any] = {}
        self.lua = workdir / "bounded.lua"
        self.lua.write_text(WRK_SCRIPT)
        data = load("a9a")
        self.rows = data.X.toarray()
        self.labels = data.y.astype(int)

    def n(self, count: int) -> int:
        return max(100, int(count * self.scale))

    def bodies(self, name: str, lines: list[str]) -> Path:
        path = self.workdir / f"{name}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return path

    def wrk(
        self, url: str, path: str, bodies: Path, seconds: float, connections: int = 16, unique: bool = False
    ) -> dict[str, Any]:
        """Closed loop for ``seconds`` (which bounds the count), cycling through ``bodies``.

        With ``unique`` (labels: each prediction id once) a run stops sending when the bodies run
        out; wrk's ``thread:stop()`` does not stop its clock, so such a run is flagged (its rate
        would be understated) and the caller must prepare more bodies than a run can send.
        """
        limit = sum(1 for _ in bodies.open()) if unique else 10**12
        env = {**os.environ, "WRK_LIMIT": str(limit), "WRK_BODIES": str(bodies), "WRK_PATH": path}
        command = [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{seconds:g}s",
            "--timeout",
            "10s",
            "-s",
            str(self.lua),
            url,
        ]
        out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
        result["rate"] = result["requests"] / result["seconds"]
        result["exhausted"] = result["requests"] >= limit - connections
        return result

    def timed(self, server: Server, path: str, bodies: Path) -> dict[str, Any]:
        """:meth:`wrk` for ``self.seconds``, and the CPU time the server's processes spent per request
        (``cpu_us``): on a machine shared with other work, throughput falls with the share of the
        cores the server gets, CPU time per request much less."""
        return with_cpu(server.pid, 1, self.wrk, server.url, path, bodies, self.seconds)

    def profiled(
        self, url: str, pid: int, bodies: Path, path: str = "/predict", unique: bool = False, rate: int = 250
    ) -> dict[str, Any]:
        """A closed-loop run of single requests to ``path`` with py-spy sampling the server: CPU us per
        request (``unique``: as :meth:`wrk`'s, each body sent once)."""
        seconds = round(self.seconds)
        raw = self.workdir / f"profile-{pid}-{path.strip('/')}.txt"
        spy = cpu_profile.start(pid, seconds, raw, rate)
        time.sleep(0.5)  # let py-spy attach before the load starts
        run = self.wrk(url, path, bodies, seconds + 1, unique=unique)
        if spy.wait() != 0:
            raise RuntimeError(f"py-spy failed: {spy.stderr.read().decode() if spy.stderr else ''}")
        requests = round(run["rate"] * seconds)
        return {"rate": run["rate"], "us": cpu_profile.us_per_request(raw, rate, requests)}

    def loadgen(self, *args: str) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "bench.loadgen", *args],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        result: dict[str, Any] = json.loads(out.stdout)
        return result


def instances(bench: Bench, start: int, count: int) -> list[list[float]]:
    idx = np.arange(start, start + count) % bench.rows.shape[0]
    return bench.rows[idx].tolist()


def predict_lines(bench: Bench, count: int, batch: int, model: str = "default") -> list[str]:
    return [
        json.dumps(
            {"model": model, "instances": instances(bench, i * batch, batch)}
            if batch > 1
            else {"model": model, "features": instances(bench, i, 1)[0]}
        )
        for i in range(count)
    ]


def fresh_predictions(client: Client, bench: Bench, count: int, model: str) -> list[tuple[str, int]]:
    """``count`` stored predictions, with their true labels, to label during a benchmark."""
    out: list[tuple[str, int]] = []
    for start in range(0, count, 1000):
        size = min(1000, count - start)
        predictions = client.predict_batch(instances(bench, start, size), model=model)
        out += [
            (p.prediction_id, int(bench.labels[(start + k) % len(bench.labels)]))
            for k, p in enumerate(predictions)
        ]
    return out


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


SERVERS = ("uvicorn", "granian") if importlib.util.find_spec("granian") is not None else ("uvicorn",)
"""The servers of the service-vs-no-op pairs: uvicorn (the default) and Granian when installed."""
LABEL_BODIES_PER_SECOND = 15_000
"""Labels prepared per second of a label run (each prediction is labelled once): above the no-op
app's own /feedback rate on the machines measured so far (its row in the section), so that a run
cannot run out of bodies, which would cap its rate (wrk's clock runs on)."""
SERVICE_ENV = {
    "ACOG_DEFAULT_MODEL": '{"name": "default", "n_features": 123}',
    "ACOG_MAX_BATCH": "1000",
    "ACOG_WS_MAX_MESSAGES_PER_SECOND": "1000000",
    # five repeats store more than the default million pending predictions (none is labelled in the
    # throughput runs, and they live for the whole label window)
    "ACOG_MAX_PENDING_PER_MODEL": "5000000",
}


class Server:
    """A server process on a free port (the no-op app, or the service under Granian), ready once
    ``/readyz`` answers 200."""

    def __init__(self, command: list[str], env: dict[str, str], port: int, log: Path) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        with log.open("ab") as out:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        for _ in range(6000):  # a cold service compiles its kernels first
            if self.process.poll() is not None:
                raise RuntimeError(f"{command} exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{command} did not become ready: {log.read_text()[-2000:]}")

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def pid(self) -> int:
        return self.process.pid

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def granian_command(target: str, port: int, factory: bool = False) -> list[str]:
    """Granian serving ``target`` the way ``acog serve --server granian`` does: ASGI, HTTP/1.1, one
    worker, its default event loop."""
    return [
        sys.executable, "-m", "granian", "--interface", "asgi", "--http", "1", "--host", "127.0.0.1",
        "--port", str(port), "--log-level", "warning", *(["--factory"] if factory else []), target,
    ]  # fmt: skip


def start_noop(server: str, workdir: Path) -> Server:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if server == "granian":
        return Server(granian_command("bench.noop_app:app", port), env, port, workdir / "noop.log")
    command = [
        sys.executable,
        "-c",
        "import uvicorn, bench.noop_app as m; "
        f"uvicorn.run(m.app, host='127.0.0.1', port={port}, log_level='warning', access_log=False)",
    ]
    return Server(command, env, port, workdir / "noop.log")


def start_service(server: str, workdir: Path, redis_url: str) -> Server:
    """The service as ``acog serve`` runs it, under ``server``."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ACOG_DATA_DIR": str(workdir / "data"),
        "ACOG_REDIS_URL": redis_url,
    }
    env.update(SERVICE_ENV)
    command = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    if server != "uvicorn":
        command += ["--server", server]
    return Server(command, env, port, workdir / f"service-{server}.log")


def median_run(runs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The run whose ``key`` is the median (the upper one of an even count), with the spread of
    ``key`` over all runs as ``<key>_min`` / ``<key>_max`` and the runs' count."""
    ordered = sorted(runs, key=lambda r: float(r[key]))
    middle = dict(ordered[len(ordered) // 2])
    middle[f"{key}_min"], middle[f"{key}_max"] = float(ordered[0][key]), float(ordered[-1][key])
    middle[f"{key}_runs"] = [float(run[key]) for run in runs]
    middle["runs"] = len(runs)
    return middle


def paired(bench: Bench, server: str, redis_url: str, single: Path) -> dict[str, Any]:
    """Single /predict, service and no-op on ``server``, alternating, ``bench.repeats`` pairs."""
    service = start_service(server, bench.workdir, redis_url)
    noop = start_noop(server, bench.workdir)
    try:
        bench.wrk(service.url, "/predict", single, 2)  # warm up
        bench.wrk(noop.url, "/predict", single, 2)
        pairs = []
        for _ in range(bench.repeats):
            ours = bench.timed(service, "/predict", single)
            theirs = bench.timed(noop, "/predict", single)
            pairs.append(
                {
                    "service": ours,
                    "noop": theirs,
                    "ratio": ours["rate"] / theirs["rate"],
                    "cpu_ratio": theirs["cpu_us"] / ours["cpu_us"],
                }
            )
        out: dict[str, Any] = {"pairs": pairs}
        if bench.profile and server == "uvicorn":
            out["profile"] = {
                "service": bench.profiled(service.url, service.pid, single),
                "noop": bench.profiled(noop.url, noop.pid, single),
            }
        return out
    finally:
        service.close()
        noop.close()


def settle_redis(url: str, timeout: float = 120.0, rewrite: bool = True) -> float:
    """Rewrite Redis's append-only file now (``BGREWRITEAOF``; not with ``rewrite`` false) and wait
    until no rewrite is in progress or scheduled and no fsync is pending; returns the seconds waited.

    The scenarios before the open loop write about 100 MiB of pending predictions, so Redis's
    automatic rewrite (at twice the last rewritten size) would fork during the open loop's
    seconds, on the two cores the service shares with it (the scenario ``open_loop_2000_rewrite``
    measures that case). A latency scenario starts from a freshly rewritten file instead, which
    keeps the next automatic rewrite out of its window."""
    start = time.perf_counter()
    client = redis.Redis.from_url(url)
    try:
        if rewrite:
            with contextlib.suppress(redis.ResponseError):  # "already in progress": wait for that one
                client.bgrewriteaof()
        quiet = 0
        while quiet < 3:
            if time.perf_counter() - start > timeout:
                raise RuntimeError(f"Redis still rewriting or syncing its AOF after {timeout:g} s")
            info = client.info("persistence")
            busy = (
                info["aof_rewrite_in_progress"]
                or info["aof_rewrite_scheduled"]
                or info.get("aof_pending_bio_fsync", 0)
                or info.get("aof_buffer_length", 0)
            )
            quiet = 0 if busy else quiet + 1
            time.sleep(0.1)
    finally:
        client.close()
    return time.perf_counter() - start


def run(bench: Bench) -> None:
    tmp = bench.workdir
    server = PrivateRedis(tmp)
    server.start()
    r = bench.results
    ticks = cpu_ticks()
    try:
        single = bench.bodies("predict1", predict_lines(bench, 20_000, 1))
        r["load_average"] = list(os.getloadavg())
        r["paired"] = {name: paired(bench, name, server.url, single) for name in bench.servers}
        if bench.pairs_only:
            return
        service = start_service("uvicorn", tmp, server.url)
        noop = start_noop("uvicorn", tmp)
        client = Client(service.url, timeout=60)
        try:
            scenarios(bench, service, noop, client, server.url)
            r["memory"] = memory(client, service.pid, server, bench)
        finally:
            client.close()
            noop.close()
            service.close()
    finally:
        r["steal"] = steal_share(ticks, cpu_ticks())
        server.close()


def scenarios(bench: Bench, service: Server, noop: Server, client: Client, redis_url: str) -> None:
    """Every other scenario, on the default server, each run ``bench.repeats`` times; single labels
    and the WebSocket predictions also go to the no-op app (``/feedback``, ``/ws``): what the server
    and pydantic cost per label and per message."""
    r, seconds, repeats = bench.results, bench.seconds, bench.repeats
    runs: dict[str, list[dict[str, Any]]] = {}

    def add(key: str, result: dict[str, Any]) -> None:
        runs.setdefault(key, []).append(result)

    batches = {size: bench.bodies(f"predict{size}", predict_lines(bench, 50, size)) for size in (100, 1000)}
    rate_bodies = bench.bodies("rate", predict_lines(bench, bench.n(2 * 10_000), 1))
    open_loop = ("open-loop", service.url, "/predict", str(rate_bodies), "--rate", "2000")
    ws_count = bench.n(20_000)
    ws_predict = bench.bodies(
        "ws_predict",
        [
            json.dumps({"type": "predict", "id": i, "model": "default", "features": x})
            for i, x in enumerate(instances(bench, 0, ws_count))
        ],
    )
    for repeat in range(repeats):
        # one label per request: each body labels a stored prediction once (more bodies than a run sends)
        pairs = fresh_predictions(client, bench, int(LABEL_BODIES_PER_SECOND * seconds), "default")
        labels = bench.bodies("feedback1", [json.dumps({"prediction_id": p, "label": y}) for p, y in pairs])
        add(
            "feedback",
            with_cpu(service.pid, 1, bench.wrk, service.url, "/feedback", labels, seconds, unique=True),
        )
        add("feedback_noop", with_cpu(noop.pid, 1, bench.wrk, noop.url, "/feedback", labels, seconds))
        pairs = fresh_predictions(client, bench, int(2 * LABEL_BODIES_PER_SECOND * seconds), "default")
        grouped = [
            json.dumps({"items": [{"prediction_id": p, "label": y} for p, y in pairs[i : i + 100]]})
            for i in range(0, len(pairs), 100)
        ]
        feedback100 = bench.bodies("feedback100", grouped)
        add(
            "feedback_batch_100",
            with_cpu(
                service.pid, 100, bench.wrk, service.url, "/feedback", feedback100, seconds, 4, unique=True
            ),
        )
        for size, path in batches.items():
            add(
                f"predict_batch_{size}",
                with_cpu(service.pid, size, bench.wrk, service.url, "/predict", path, seconds, 4),
            )
        # open loop: latency at a fixed rate of single predictions, from a rewritten AOF
        settled = settle_redis(redis_url)
        loop = with_cpu(service.pid, 1, bench.loadgen, *open_loop)
        add("open_loop_2000", {**loop, "settle_seconds": settled})
        # the same loop while Redis rewrites its AOF (a fork on the cores the service shares)
        with redis.Redis.from_url(redis_url) as store:
            store.bgrewriteaof()
        rewriting = bench.loadgen(*open_loop)
        add("open_loop_2000_rewrite", {**rewriting, "settle_seconds": settle_redis(redis_url, rewrite=False)})
        # the WebSocket: predictions pipelined, then their labels
        add(
            "ws_predict",
            with_cpu(service.pid, 1, bench.loadgen, "websocket", service.ws_url, str(ws_predict)),
        )
        add("ws_noop", with_cpu(noop.pid, 1, bench.loadgen, "websocket", noop.ws_url, str(ws_predict)))
        pairs = fresh_predictions(client, bench, ws_count, "default")
        ws_feedback = [
            json.dumps({"type": "feedback", "id": i, "prediction_id": p, "label": y})
            for i, (p, y) in enumerate(pairs)
        ]
        feedback_messages = bench.bodies("ws_feedback", ws_feedback)
        add(
            "ws_feedback",
            with_cpu(service.pid, 1, bench.loadgen, "websocket", service.ws_url, str(feedback_messages)),
        )
        print(f"repeat {repeat + 1} of {repeats} done", file=sys.stderr, flush=True)
    if bench.profile:  # where a single label spends its CPU, in the service and in the no-op
        pairs = fresh_predictions(
            client, bench, int(LABEL_BODIES_PER_SECOND * (round(seconds) + 1)), "default"
        )
        labels = bench.bodies(
            "feedback_profile", [json.dumps({"prediction_id": p, "label": y}) for p, y in pairs]
        )
        r["label_profile"] = {
            "service": bench.profiled(service.url, service.pid, labels, "/feedback", unique=True),
            "noop": bench.profiled(noop.url, noop.pid, labels, "/feedback"),
        }
    for key, results in runs.items():
        if key.startswith("ws_"):
            r[key] = median_run(results, "messages_per_second")
        elif key.startswith("open_loop"):
            r[key] = median_run(results, "p99")
        else:
            r[key] = median_run(results, "rate")


def memory(client: Client, pid: int, server: PrivateRedis, bench: Bench) -> dict[str, Any]:
    store = redis.Redis.from_url(server.url)
    out: dict[str, Any] = {}
    # pending predictions first: the service keeps nothing for them, and measured after the models
    # below, their RSS figure caught the release of those models' memory and came out negative
    for label, model, dim in (("d=123", "default", 123), ("d=10^6 (20 non-zeros)", "sparse", 10**6)):
        if model != "default":
            client.put_model(model, {"n_features": dim, "algorithm": "ssacog", "eta": 1.0})
        count = 10_000
        before_rss, before_redis = rss_bytes(pid), int(store.info("memory")["used_memory"])
        rng = np.random.default_rng(0)
        for start in range(0, count, 1000):
            if dim == 123:
                batch: list[Any] = instances(bench, start, 1000)
            else:
                batch = [
                    Sparse(sorted(rng.choice(dim, 20, replace=False).tolist()), rng.random(20).tolist())
                    for _ in range(1000)
                ]
            client.predict_batch(batch, model=model)
        time.sleep(0.2)
        after_rss, after_redis = rss_bytes(pid), int(store.info("memory")["used_memory"])
        out[f"pending prediction, {label}"] = {
            "rss_per_model": (after_rss - before_rss) / count,
            "redis_per_model": (after_redis - before_redis) / count,
        }
    for label, config, copies in (
        ("acog, d=123, defaults (10 members: 5 eta x 2 losses)", {"n_features": 123}, 8),
        ("acog, d=123, eta and loss fixed (1 member)", {"n_features": 123, "eta": 1.0, "loss": "II"}, 8),
        (
            "ssacog, d=10^6, eta and loss fixed (1 member)",
            {"n_features": 10**6, "algorithm": "ssacog", "eta": 1.0, "loss": "II"},
            3,
        ),
        ("ssacog, d=10^6, defaults (10 members)", {"n_features": 10**6, "algorithm": "ssacog"}, 2),
    ):
        before_rss, before_redis = rss_bytes(pid), int(store.info("memory")["used_memory"])
        names = [f"mem{len(out)}-{k}" for k in range(copies)]
        rng = np.random.default_rng(1)
        dim = int(cast(int, config["n_features"]))
        for name in names:  # each model learns 200 labels and writes one checkpoint
            client.put_model(name, config)
            examples = [
                (x if dim == 123 else Sparse(sorted(rng.choice(dim, 20, replace=False)), [1.0] * 20), y)
                for x, y in zip(instances(bench, 0, 200), bench.labels[:200].tolist(), strict=True)
            ]
            client.learn_batch(examples, model=name)
            client.checkpoint(name)
        state_bytes = (client.get_model(names[0]).state or {})["state_bytes"]
        time.sleep(0.5)
        after_rss, after_redis = rss_bytes(pid), int(store.info("memory")["used_memory"])
        out[label] = {
            "state": state_bytes,
            "rss_per_model": (after_rss - before_rss) / copies,
            "redis_per_model": (after_redis - before_redis) / copies,
        }
        for name in names:
            client.delete_model(name)
    store.close()
    return dict(sorted(out.items(), key=lambda item: item[0].startswith("pending")))  # models first


def cpu_ticks() -> tuple[int, int]:
    """(steal, total) ticks of all cores since boot, from /proc/stat; (0, 0) where there is none."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0, 0
    ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (ticks[7] if len(ticks) > 7 else 0), sum(ticks)


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the request counts, 3 s runs")
    parser.add_argument("--repeats", type=int, default=3, help="runs of every scenario (default 3)")
    parser.add_argument(
        "--servers",
        default=None,
        help="servers for the service-vs-no-op pairs (default: uvicorn, and granian when installed)",
    )
    parser.add_argument("--output", default=None, help="write the section into this markdown file")
    parser.add_argument("--json", default=None, help="also dump the raw results here")
    parser.add_argument(
        "--no-profile", action="store_true", help="skip the py-spy profiles of single requests"
    )
    parser.add_argument(
        "--pairs-only",
        action="store_true",
        help="only the service-vs-no-op pairs (printed as JSON, not written)",
    )
    args = parser.parse_args(argv)
    for tool, package in (("wrk", "wrk"), ("redis-server", "redis-server")):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not on PATH: install it first (Debian: apt-get install {package})")
    profile = not args.no_profile
    if profile and not cpu_profile.available():
        parser.error(
            "py-spy is not on PATH: install the dev extras (pip install -e '.[dev]') or use --no-profile"
        )
    servers = tuple(args.servers.split(",")) if args.servers else SERVERS
    if "uvicorn" not in servers:
        parser.error("--servers must include uvicorn (the default server, where every other scenario runs)")
    if "granian" in servers and importlib.util.find_spec("granian") is None:
        parser.error("granian is not installed: pip install granian, or --servers uvicorn")
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(Path(tmp), args.quick, profile, args.repeats, servers)
        bench.pairs_only = args.pairs_only
        run(bench)
    if args.pairs_only:
        print(json.dumps(bench.results["paired"], indent=1))
        return 0
    command = " ".join(
        [
            "python -m bench.service_load",
            *(["--quick"] if args.quick else []),
            f"--repeats {args.repeats}",
            f"--servers {','.join(servers)}",
            *([] if profile else ["--no-profile"]),
        ]
    )
    text = report(bench.results, command)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(bench.results, indent=2))
    if args.output:
        from bench.report import write_section

        write_section(Path(args.output), "service-load", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
