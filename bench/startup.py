"""Start-up: how long ``acog serve`` takes to be ready with a cold and a warm kernel cache, and
how fast the first requests after ready are.

    .venv/bin/python -m bench.startup [--cold 3] [--warm 5] [--output docs/benchmarks.md]

On 127.0.0.1: a Redis server of its own; ``acog serve`` with a default model of 30 features (the
default ensemble: linear ACOG, the quadratic family, the forest and nearest neighbours) and the
kernel cache in a directory of the run's own (``ACOG_JIT_CACHE_DIR``). Each start is timed from launching the
process to its first HTTP answer (it listens at once: ``/readyz`` answers 503 saying what is left)
and to the first 200 from ``/readyz``; then 100 requests (50 single /predict, each followed by its
/feedback) are timed one by one on one keep-alive connection, and the process is stopped.

- cold, ``ACOG_WARM_UP=models`` (the default): an empty cache each time, as after ``pip install``,
  only what the default model runs compiled (its ensemble's families included);
- cold, ``ACOG_WARM_UP=all``: an empty cache, every algorithm compiled;
- warm: the cache the last cold start wrote (every later start of an installed service).

Baseline of the ratios: the warm start, in the same run.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from bench.report import cpu_model, spread, write_section
from tests.support.private_redis import PrivateRedis
from tests.support.service_process import ServiceProcess

N_FEATURES = 30
REQUESTS = 100
SECTION = "startup"


def first_requests(url: str) -> list[float]:
    """Seconds taken by each of the first :data:`REQUESTS` requests: /predict, then its /feedback."""
    rng = np.random.default_rng(0)
    latencies = []
    with httpx.Client(base_url=url, timeout=120) as client:
        for i in range(REQUESTS // 2):
            start = time.perf_counter()
            reply = client.post("/predict", json={"features": rng.normal(size=N_FEATURES).tolist()})
            latencies.append(time.perf_counter() - start)
            reply.raise_for_status()
            body = {"prediction_id": reply.json()["prediction_id"], "label": 1 if i % 3 == 0 else -1}
            start = time.perf_counter()
            client.post("/feedback", json=body).raise_for_status()
            latencies.append(time.perf_counter() - start)
    return latencies


def start_once(workdir: Path, redis_url: str, cache: Path, warm_up: str) -> dict[str, float]:
    """One start: seconds to listening and to ready, then the first requests' p50, p99 and maximum (ms)."""
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    env = {
        "ACOG_REDIS_URL": redis_url,
        "ACOG_JIT_CACHE_DIR": str(cache),
        "ACOG_WARM_UP": warm_up,
        "ACOG_DEFAULT_MODEL": f'{{"name": "default", "n_features": {N_FEATURES}}}',
    }
    service = ServiceProcess(workdir, env)
    started = time.perf_counter()
    service.start(timeout=1800)
    ready = time.perf_counter() - started
    listening = (service.listening or time.perf_counter()) - started
    try:
        latencies = np.array(first_requests(service.url)) * 1000
    finally:
        service.stop()
    return {
        "listening_s": listening,
        "ready_s": ready,
        "p50_ms": float(np.percentile(latencies, 50)),
        "p99_ms": float(np.percentile(latencies, 99)),
        "max_ms": float(latencies.max()),
    }


def render(runs: dict[str, list[dict[str, float]]], cold: int, warm: int) -> str:
    baseline = statistics.median(r["ready_s"] for r in runs["warm"])
    labels = {
        "cold-models": "cold cache, `ACOG_WARM_UP=models` (default)",
        "cold-all": "cold cache, `ACOG_WARM_UP=all`",
        "warm": "warm cache",
    }
    lines = [
        "## Start-up",
        "",
        f"Command: `python -m bench.startup --cold {cold} --warm {warm}`. Machine: {cpu_model()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}. `acog serve` on a Redis of its "
        f"own with a default model of {N_FEATURES} features (the default ensemble: linear ACOG, the "
        "quadratic family, the forest and nearest neighbours); time from launching the process to its "
        "first HTTP answer (it listens at once; `/readyz` says what is "
        "left) and to the first 200 from `/readyz`, then the first "
        f"{REQUESTS} requests (single /predict, each followed by its /feedback) one by one. A cold start "
        "has an empty kernel cache (`ACOG_JIT_CACHE_DIR`), as after `pip install`; a warm one, the cache "
        "a cold start wrote. Median of the starts (min to max). Baseline of the ratio: the warm start, "
        "same run.",
        "",
        "| start | starts | to listening (s) | to ready (s) | / warm | first requests p50 (ms) | p99 (ms) "
        "| max (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key in ("cold-models", "cold-all", "warm"):
        rows = runs[key]
        ratio = [r["ready_s"] / baseline for r in rows]
        lines.append(
            f"| {labels[key]} | {len(rows)} | {spread([r.get('listening_s', math.nan) for r in rows], 1)} | "
            f"{spread([r['ready_s'] for r in rows], 1)} | {spread(ratio, 2)} | "
            f"{spread([r['p50_ms'] for r in rows], 2)} | {spread([r['p99_ms'] for r in rows], 2)} | "
            f"{spread([r['max_ms'] for r in rows], 2)} |"
        )
    lines += [
        "",
        "With `ACOG_WARM_UP=models` (the default) the service compiles only what its stored and default "
        "models need before it is ready; a model of another algorithm compiles while it is created "
        "(`PUT /models/{name}` answers once it has), never on the label path. With `all` it compiles "
        "the kernels of every algorithm first, so no model created later waits for numba. `acog "
        "warm-up` fills the cache without starting the service.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", type=int, default=3, help="cold starts of each kind")
    parser.add_argument("--warm", type=int, default=5, help="warm starts")
    parser.add_argument("--output", default=None, help="rewrite the start-up section of this file")
    args = parser.parse_args(argv)
    if args.cold < 1 or args.warm < 1:
        parser.error("--cold and --warm must be at least 1")
    runs: dict[str, list[dict[str, float]]] = {"cold-all": [], "cold-models": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        redis_server = PrivateRedis(workdir)
        redis_server.start()
        try:
            for i in range(args.cold):
                for warm_up in ("models", "all"):  # the "all" cache is the one the warm starts load
                    cache = workdir / f"cache-{warm_up}-{i}"
                    runs[f"cold-{warm_up}"].append(start_once(workdir, redis_server.url, cache, warm_up))
                    print(f"cold {warm_up}", runs[f"cold-{warm_up}"][-1], flush=True)
            for _ in range(args.warm):
                runs["warm"].append(start_once(workdir, redis_server.url, cache, "all"))
                print("warm", runs["warm"][-1], flush=True)
        finally:
            redis_server.stop()
    text = render(runs, args.cold, args.warm)
    print(text)
    if args.output:
        write_section(args.output, SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
