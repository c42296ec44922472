"""Replicas: throughput with 1 and 2 workers, CPU per prediction, and how far a follower lags.

    .venv/bin/python -m bench.replicas [--quick] [--repeats 3] [--output docs/benchmarks.md]

On 127.0.0.1: a Redis server of its own (append-only, ``appendfsync everysec``), then, in turn,
``acog serve --workers 1`` and ``acog serve --workers 2`` on it, each serving the default model on
a9a's 123 features. ``wrk`` (a separate process, closed loop, bounded by time) sends single
/predict requests, then single /feedback labels (each a fresh prediction id); the CPU time of
the serving processes (the uvicorn parent and its workers, from /proc) is read before and after,
so CPU per prediction is measured whatever else shares the two cores (the load generator, Redis).

Follower lag: two single-worker replicas A and B on the same Redis; labels go to A only, open
loop at 1,000 labels/s (``bench.loadgen``); B applies each one and observes, in
``acog_follower_lag_seconds``, the time from its acknowledgement by A to its application on B.
The percentiles are read from B's histogram the way Prometheus's ``histogram_quantile`` does
(linear within a bucket).

Baseline of the ratios: the same benchmark with one worker, in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.cpu_profile import cpu_seconds
from bench.report import cpu_model, spread, write_section
from bench.service_load import Bench
from service.telemetry import MULTIPROCESS_DIR
from tests.support.private_redis import PrivateRedis
from tests.support.service_process import ROOT, ServiceProcess

MODEL = {"n_features": 123}


class Service(ServiceProcess):
    """``acog serve --workers N`` (ServiceProcess runs one worker)."""

    def __init__(self, directory: Path, env: dict[str, str], workers: int) -> None:
        super().__init__(directory, env)
        self.workers = workers

    def start(self, timeout: float = 120.0) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service.cli",
                "serve",
                "--port",
                str(self.port),
                "--workers",
                str(self.workers),
            ],
            env=self.env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the service did not become ready:\n{self.log()}")


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """``histogram_quantile`` of Prometheus over cumulative ``(upper bound, count)`` buckets."""
    total = buckets[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if upper == float("inf"):
                return lower
            return lower + (upper - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = upper, count
    return lower


def lag_buckets(url: str, model: str) -> list[tuple[float, float]]:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    out = []
    for line in text.splitlines():
        if line.startswith("acog_follower_lag_seconds_bucket{") and f'model="{model}"' in line:
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            out.append((float(bound), float(line.rsplit(" ", 1)[1])))
    return sorted(out)


class Replicas:
    def __init__(self, workdir: Path, quick: bool) -> None:
        self.workdir = workdir
        self.bench = Bench(workdir, quick)
        self.seconds = 3.0 if quick else 8.0

    def throughput(self, redis_url: str, workers: int, file_metrics: bool = False) -> dict[str, float]:
        """``file_metrics``: one worker with prometheus-client's multiprocess mode on, as every worker
        of ``--workers 2`` has it (metrics in mmap'd files), to tell its cost from the replicas'."""
        env = {"ACOG_REDIS_URL": redis_url, "ACOG_CHECKPOINT_EVERY_SECONDS": "3600"}
        home = self.workdir / f"workers-{workers}{'-files' if file_metrics else ''}"
        home.mkdir(exist_ok=True)
        if file_metrics:
            metrics = home / "metrics"
            shutil.rmtree(metrics, ignore_errors=True)
            metrics.mkdir()
            env[MULTIPROCESS_DIR] = str(metrics)
        service = Service(home, env, workers)
        service.start()
        try:
            name = f"w{workers}"
            httpx.put(f"{service.url}/models/{name}", json=MODEL, timeout=60).raise_for_status()
            bench = self.bench
            rows = bench.rows[:2000]
            single = bench.bodies(
                f"single-{name}", [json.dumps({"model": name, "features": r.tolist()}) for r in rows]
            )
            bench.wrk(service.url, "/predict", single, 2)  # warm up every worker
            before = cpu_seconds(service.process.pid)  # type: ignore[union-attr]
            predict = bench.wrk(service.url, "/predict", single, self.seconds, connections=32)
            if not predict["requests"] or predict["non2xx"] or predict["errors"]:
                raise RuntimeError(f"/predict under load: {predict}\n{service.log()}")
            predict_cpu = cpu_seconds(service.process.pid) - before  # type: ignore[union-attr]
            ids = []
            with httpx.Client(base_url=service.url, timeout=60) as http:
                for start in range(0, 40_000, 1000):
                    batch = [rows[(start + i) % len(rows)].tolist() for i in range(1000)]
                    reply = http.post("/predict", json={"model": name, "instances": batch}).json()
                    ids += [p["prediction_id"] for p in reply["predictions"]]
            labels = bench.bodies(
                f"labels-{name}", [json.dumps({"prediction_id": pid, "label": 1}) for pid in ids]
            )
            label = bench.wrk(service.url, "/feedback", labels, self.seconds, connections=32, unique=True)
            return {
                "predictions_per_s": predict["rate"],
                "cpu_us_per_prediction": 1e6 * predict_cpu / predict["requests"],
                "predict_p99_ms": predict["p99"],
                "labels_per_s": label["rate"],
                "label_p99_ms": label["p99"],
            }
        finally:
            service.stop(timeout=60)

    def lag(self, redis_url: str, rate: int, count: int) -> dict[str, float]:
        env = {"ACOG_REDIS_URL": redis_url, "ACOG_CHECKPOINT_EVERY_SECONDS": "3600"}
        a, b = ServiceProcess(self.workdir, env), ServiceProcess(self.workdir, env)
        a.start()
        b.start()
        try:
            httpx.put(f"{a.url}/models/lag", json=MODEL, timeout=60).raise_for_status()
            while httpx.get(f"{b.url}/models/lag", timeout=5).status_code != 200:
                time.sleep(0.05)
            rows = self.bench.rows
            ids = []
            with httpx.Client(base_url=a.url, timeout=60) as http:
                for start in range(0, count, 1000):
                    batch = [rows[(start + i) % len(rows)].tolist() for i in range(1000)]
                    reply = http.post("/predict", json={"model": "lag", "instances": batch}).json()
                    ids += [p["prediction_id"] for p in reply["predictions"]]
            bodies = self.bench.bodies(
                "lag", [json.dumps({"prediction_id": pid, "label": -1}) for pid in ids[:count]]
            )
            run = self.bench.loadgen("open-loop", a.url, "/feedback", str(bodies), "--rate", str(rate))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                buckets = lag_buckets(b.url, "lag")
                if buckets and buckets[-1][1] >= count:
                    break
                time.sleep(0.2)
            return {
                "rate": run["achieved_rate"],
                "errors": run["errors"],
                "p50_ms": 1e3 * histogram_quantile(0.5, buckets),
                "p90_ms": 1e3 * histogram_quantile(0.9, buckets),
                "p99_ms": 1e3 * histogram_quantile(0.99, buckets),
                "applied": buckets[-1][1],
            }
        finally:
            a.stop(timeout=60)
            b.stop(timeout=60)


def _file_metrics_lines(
    one: list[dict[str, float]], two: list[dict[str, float]], files: list[dict[str, float]]
) -> list[str]:
    """Where the second worker's extra CPU per prediction comes from: one worker with the metrics in
    files (prometheus-client's multiprocess mode, which ``--workers 2`` needs), same run."""

    def ratios(a: list[dict[str, float]], b: list[dict[str, float]]) -> str:
        values = [y["cpu_us_per_prediction"] / x["cpu_us_per_prediction"] for x, y in zip(a, b, strict=True)]
        return spread(values, 2)

    cpu = [r["cpu_us_per_prediction"] for r in files]
    return [
        "One worker with its metrics in files (prometheus-client's multiprocess mode, as every worker of "
        "`--workers 2` has them), in the same repeats:",
        "",
        "| | 1 worker, metrics in files | / 1 worker | 2 workers / it |",
        "|---|---:|---:|---:|",
        f"| service CPU per prediction (us) | {spread(cpu)} | {ratios(one, files)} | {ratios(files, two)} |",
        f"| single /predict per s | {spread([r['predictions_per_s'] for r in files])} | | |",
        "",
    ]


def render(
    runs: dict[int, list[dict[str, float]]],
    lags: list[dict[str, float]],
    repeats: int,
    files: list[dict[str, float]] | None = None,
) -> str:
    """The section; ``files``: the runs of one worker with file-backed (multiprocess) metrics."""
    one, two = runs[1], runs[2]
    ratio = [b["predictions_per_s"] / a["predictions_per_s"] for a, b in zip(one, two, strict=True)]
    cpu_ratio = [
        b["cpu_us_per_prediction"] / a["cpu_us_per_prediction"] for a, b in zip(one, two, strict=True)
    ]
    label_ratio = [b["labels_per_s"] / a["labels_per_s"] for a, b in zip(one, two, strict=True)]
    lines = [
        "## Replicas (`python -m bench.replicas`)",
        "",
        f"Command: `python -m bench.replicas --repeats {repeats}`. Machine: {cpu_model()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}. `acog serve --workers N` on a "
        "Redis of its own (append-only, "
        "everysec); wrk closed loop (32 connections) on the same two cores; the default model on a9a "
        "(123 features). Median of the repeats (min to max). Baseline of the ratios: one worker, same run.",
        "",
        "| | 1 worker | 2 workers | 2 / 1 |",
        "|---|---:|---:|---:|",
        f"| single /predict per s | {spread([r['predictions_per_s'] for r in one])} | "
        f"{spread([r['predictions_per_s'] for r in two])} | {spread(ratio, 2)} |",
        f"| service CPU per prediction (us) | {spread([r['cpu_us_per_prediction'] for r in one])} | "
        f"{spread([r['cpu_us_per_prediction'] for r in two])} | {spread(cpu_ratio, 2)} |",
        f"| single /feedback labels per s | {spread([r['labels_per_s'] for r in one])} | "
        f"{spread([r['labels_per_s'] for r in two])} | {spread(label_ratio, 2)} |",
        f"| /predict p99 (ms) | {spread([r['predict_p99_ms'] for r in one], 1)} | "
        f"{spread([r['predict_p99_ms'] for r in two], 1)} | |",
        "",
        *(_file_metrics_lines(one, two, files) if files else []),
        "Each worker is a full replica: it applies every label, whichever worker took it, so the "
        "label rate does not scale with workers. With the load generator and Redis on the same two "
        "cores, two workers cannot double the prediction rate; the CPU each prediction costs shows "
        "whether a second replica adds work per prediction.",
        "",
        "Follower lag: replica B applies labels acknowledged by replica A (open loop, labels one per "
        "request), from B's `acog_follower_lag_seconds` histogram:",
        "",
        "| offered labels/s | sent/s | p50 (ms) | p90 (ms) | p99 (ms) |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines.append(
        f"| 1,000 | {spread([r['rate'] for r in lags])} | {spread([r['p50_ms'] for r in lags], 2)} | "
        f"{spread([r['p90_ms'] for r in lags], 2)} | {spread([r['p99_ms'] for r in lags], 2)} |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replicas", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (a smoke test)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=None, help="rewrite the replicas section of this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        redis_server = PrivateRedis(workdir)
        redis_server.start()
        try:
            bench = Replicas(workdir, args.quick)
            runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
            files: list[dict[str, float]] = []
            lags = []
            for _ in range(args.repeats):
                for workers in (1, 2):
                    runs[workers].append(bench.throughput(redis_server.url, workers))
                    print(workers, runs[workers][-1], flush=True)
                files.append(bench.throughput(redis_server.url, 1, file_metrics=True))
                print("1, metrics in files", files[-1], flush=True)
                lags.append(bench.lag(redis_server.url, 1000, 3000 if args.quick else 10_000))
                print("lag", lags[-1], flush=True)
        finally:
            redis_server.close()
    text = render(runs, lags, args.repeats, files)
    print(text)
    if args.output:
        write_section(args.output, "replicas", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
