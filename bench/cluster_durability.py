"""Durable labels on Redis Cluster: what ``ACOG_REDIS_WAIT_REPLICAS=1`` costs per label, and what the
default mode loses in a failover with a lagging replica.

    .venv/bin/python -m bench.cluster_durability [--repeats 3] [--labels 400] [--output docs/benchmarks.md]

On 127.0.0.1: a Redis Cluster of 3 masters with a replica each (append-only, ``appendfsync
everysec``). Cost: two ``acog serve`` processes on it, one in the default mode and one with
``ACOG_REDIS_WAIT_REPLICAS=1``, each with its own model; in each repeat, alternately, ``--labels``
predictions are stored and then labelled one per ``/feedback`` request, in sequence over one
keep-alive connection, and the wall time per label is taken. Baseline of the ratio: the default
mode, in the same repeat.

Failover window: the scenario of ``tests/replicas/failover.py`` (2 service processes, 2 clients,
600 labels; after 150 acknowledged labels the model's replica stalls and loses its link, 2 s later
its master is killed with SIGKILL and the replica promoted), once per mode and repeat: the
acknowledged labels that are not in the log afterwards are the lost ones.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.report import cpu_model, write_section
from service.datasets import load
from tests.replicas.failover import failover
from tests.support.redis_cluster import RedisClusterProcesses
from tests.support.service_process import ServiceProcess

MODES = {"default": {}, "replicated": {"ACOG_REDIS_WAIT_REPLICAS": "1"}}
CONFIG = {"n_features": 24}


def german() -> tuple[list[list[float]], list[int]]:
    data = load("german")
    assert data.permutations is not None
    order = data.permutations[0]
    return data.X[order].toarray().tolist(), [int(v) for v in data.y[order]]


def label_seconds(service: ServiceProcess, model: str, X: list[list[float]], y: list[int]) -> float:
    """Mean wall time of one /feedback request with one label (the predictions stored beforehand)."""
    with httpx.Client(base_url=service.url, timeout=30) as client:
        predicted = client.post("/predict", json={"model": model, "instances": X}).json()["predictions"]
        start = time.perf_counter()
        for p, label in zip(predicted, y, strict=True):
            answer = client.post("/feedback", json={"prediction_id": p["prediction_id"], "label": label})
            assert answer.status_code == 200 and answer.json()["applied"], answer.text
        return (time.perf_counter() - start) / len(X)


def cost(workdir: Path, repeats: int, labels: int) -> dict[str, list[float]]:
    """Seconds per label, per mode and repeat."""
    X, y = german()
    cluster = RedisClusterProcesses(workdir / "cluster", replicas=1)
    cluster.start()
    services: dict[str, ServiceProcess] = {}
    try:
        for mode, env in MODES.items():
            home = workdir / mode
            home.mkdir()
            env = {"ACOG_REDIS_URL": cluster.url, "ACOG_REDIS_CONNECT_TIMEOUT_SECONDS": "10", **env}
            services[mode] = ServiceProcess(home, env)
            services[mode].start()
            httpx.put(f"{services[mode].url}/models/{mode}", json=CONFIG, timeout=30).raise_for_status()
        seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
        for repeat in range(repeats):
            rows = slice(repeat * labels % len(X), repeat * labels % len(X) + labels)
            for mode, service in services.items():
                seconds[mode].append(label_seconds(service, mode, X[rows], y[rows]))
                print(mode, f"{seconds[mode][-1] * 1e3:.2f} ms per label", flush=True)
        return seconds
    finally:
        for service in services.values():
            service.kill()
        cluster.close()


def window(workdir: Path, repeats: int) -> dict[str, list[tuple[int, int]]]:
    """(lost, acknowledged) per mode and repeat of the failover scenario."""
    X, y = german()
    runs: dict[str, list[tuple[int, int]]] = {mode: [] for mode in MODES}
    for repeat in range(repeats):
        for mode, env in MODES.items():
            directory = workdir / f"failover-{mode}-{repeat}"
            directory.mkdir()
            with failover(directory, X[:600], y[:600], {**env, "ACOG_REDIS_WAIT_TIMEOUT_SECONDS": "2"}) as (
                run,
                _,
                _,
            ):
                runs[mode].append((len(run.lost), len(run.acknowledged)))
            print(mode, "lost", runs[mode][-1], flush=True)
    return runs


def spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f} to {max(values):.{digits}f})"


def render(
    seconds: dict[str, list[float]], runs: dict[str, list[tuple[int, int]]], repeats: int, labels: int
) -> str:
    default, replicated = seconds["default"], seconds["replicated"]
    ratios = [r / d for d, r in zip(default, replicated, strict=True)]
    lines = [
        "## Durable labels on Redis Cluster (`python -m bench.cluster_durability`)",
        "",
        f"Command: `python -m bench.cluster_durability --repeats {repeats} --labels {labels}`. Machine: "
        f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}. A Redis Cluster of 3 "
        "masters with a replica each on loopback; median of the repeats (min to max).",
        "",
        "| mode | ms per label | ratio to default |",
        "|---|---|---|",
        f"| default | {spread([s * 1e3 for s in default])} | 1 |",
        f"| replicated (`ACOG_REDIS_WAIT_REPLICAS=1`) | {spread([s * 1e3 for s in replicated])} | "
        f"{spread(ratios)} |",
        "",
        "One label per `/feedback` request, in sequence. Failover with the model's replica stalled and "
        "its link dropped for 2 s before its master is killed (600 labels, 2 clients; lost = "
        "acknowledged but not in the log after the failover):",
        "",
        "| failover | lost of acknowledged, per run |",
        "|---|---|",
    ]
    for mode in MODES:
        lines.append(f"| {mode} | {', '.join(f'{lost} of {acked}' for lost, acked in runs[mode])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cluster_durability", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--labels", type=int, default=400)
    parser.add_argument("--output", default=None, help="rewrite the cluster_durability section of this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        seconds = cost(workdir, args.repeats, args.labels)
        runs = window(workdir, args.repeats)
    text = render(seconds, runs, args.repeats, args.labels)
    print(text)
    if args.output:
        write_section(args.output, "cluster_durability", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
