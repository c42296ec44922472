"""Running a job exactly as ``acog evaluate`` would, the JSON cache of the results, and reading them.

A data set's result (``NAME.json``) holds its protocol ``jobs``, each with the ``rows`` of its run
(per algorithm: the ``best`` setting's summary and every ``tried`` one); after loading, its
``extras`` (``NAME.extras.json``) hold the further runs of :mod:`bench.reproduction.extras`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.report import cpu_model, package_versions
from bench.reproduction.plans import SEED, Job, Plan, jobs_for
from research.protocols import online as ev
from research.protocols.online_cli import settings_from_args
from service.cli import build_parser as build_acog_parser
from service.datasets import Dataset, l2_normalize, load
from service.learners import create
from service.measures import Measures, Objective

_DATA: dict[str, Dataset] = {}


def dataset(name: str, positive_label: float | None = None) -> Dataset:
    """Load once per process (the loaders parse text files)."""
    key = f"{name}:{positive_label}"
    if key not in _DATA:
        _DATA[key] = load(name, positive_label=positive_label)
    return _DATA[key]


def parse_job(argv: Sequence[str]) -> argparse.Namespace:
    """``acog evaluate ARGV`` parsed by the real CLI parser."""
    return build_acog_parser().parse_args(["evaluate", *argv])


def settings_of(args: argparse.Namespace) -> ev.OnlineProtocol:
    """The settings ``acog evaluate`` builds from the same arguments."""
    return settings_from_args(args)


def run_job(job: Job) -> dict[str, Any]:
    """Run one job; returns its rows (best and every tried setting) and wall time."""
    args = parse_job(job.argv)
    data = dataset(args.dataset)
    metrics: list[ev.Metric] = ["sum", "cost"] if args.metric == "both" else [args.metric]
    orders = ev.permutations(data, args.permutations, args.seed)
    start = time.perf_counter()
    rows = [
        {
            "algorithm": variant.label,
            "metric": metric,
            "best": best.summary(),
            "tried": [t.summary() for t in tried],
        }
        for variant, metric, best, tried in ev.evaluate(
            data, ev.parse_variants(args.algorithms), metrics, settings_of(args), orders
        )
    ]
    return {"block": job.block, "command": job.command, "rows": rows, "seconds": time.perf_counter() - start}


def run_stream(
    data: Dataset,
    algorithm: str,
    params: dict[str, Any],
    orders: np.ndarray,
    prepare: Callable[[Any, int], None] | None = None,
    scale: float = 1.0,
) -> dict[str, Any]:
    """Like one ``evaluate`` setting, but ``prepare(learner, i)`` may edit each fresh learner, and
    every normalised input is multiplied by ``scale``."""
    X = l2_normalize(data.X)
    if scale != 1.0:
        X.data *= scale
    y = np.asarray(data.y, dtype=np.int64)
    runs = ev.Runs(dict(params))
    for i, order in enumerate(orders):
        learner = create(algorithm, n_features=X.shape[1], **params)
        if prepare is not None:
            prepare(learner, i)
        start = time.perf_counter()
        result = learner.run(X[order], y[order])
        runs.seconds.append(time.perf_counter() - start)
        m = Measures.of(y[order], result.predictions, Objective(0.5, 0.9))
        runs.sums.append(100.0 * m.weighted_sum)
        runs.sensitivities.append(100.0 * m.sensitivity)
        runs.specificities.append(100.0 * m.specificity)
        runs.costs.append(m.weighted_cost / 100.0)
    return runs.summary()


def compute(plan: Plan, permutations: int) -> dict[str, Any]:
    """The protocol runs of one data set (the tables of the report)."""
    start = time.perf_counter()
    data = dataset(plan.dataset)
    result: dict[str, Any] = {
        "dataset": plan.dataset,
        "rows": data.n_samples,
        "features": data.n_features,
        "positives": data.n_positive,
        "negatives": data.n_negative,
        "permutations": permutations,
        "seed": None if plan.own_permutations else SEED,
        "jobs": [],
    }
    for job in jobs_for(plan, permutations):
        print(f"[{plan.dataset}] {job.command}", file=sys.stderr, flush=True)
        result["jobs"].append(run_job(job))
    result["compute_seconds"] = time.perf_counter() - start
    result["machine"] = machine()
    return result


def machine() -> dict[str, str]:
    """CPU model, core count and library versions of this machine."""
    return {
        "cpu": cpu_model(),
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        **package_versions(("numpy", "scipy", "numba")),
    }


def cached(path: Path, permutations: int) -> dict[str, Any] | None:
    if not path.exists():
        return None
    result: dict[str, Any] = json.loads(path.read_text())
    return result if result.get("permutations") == permutations else None


def job_rows(result: dict[str, Any], block: str) -> Iterable[dict[str, Any]]:
    for job in result["jobs"]:
        if job["block"] == block:
            yield from job["rows"]


def extra_row(extras: dict[str, Any], job: str, algorithm: str) -> dict[str, Any] | None:
    for row in extras.get("jobs", {}).get(job, {}).get("rows", []):
        if row["algorithm"] == algorithm:
            return row
    return None


def best_params(result: dict[str, Any], block: str, algorithm: str) -> dict[str, Any]:
    for job in result["jobs"]:
        if job["block"] == block:
            for row in job["rows"]:
                if row["algorithm"] == algorithm:
                    return dict(row["best"]["params"])
    raise KeyError((block, algorithm))
