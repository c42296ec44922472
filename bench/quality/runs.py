"""Running every system on every order of a data set, and the JSON cache of the results.

A data set's result holds, per system key and measure, the counts ``[t_p, t_n, m_p, m_n]``
and the seconds of every order; hindsight runs are keyed ``KIND@ETA``, one per eta.
"""

from __future__ import annotations

import argparse
import re
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.protocol import METRICS, OBJECTIVE, PAPER_GRID, Stream
from bench.quality.systems import HINDSIGHT, System, hindsight_predict
from service.learners import InvalidParameter
from service.measures import Measures

DEFAULT_RESULTS_DIR = Path("/tmp/acog-quality")


@dataclass
class Record:
    """Per-order counts and seconds of one system on one data set and measure."""

    counts: list[list[int]] = field(default_factory=list)  # [t_p, t_n, m_p, m_n] per order
    seconds: list[float] = field(default_factory=list)

    def add(self, y: np.ndarray, predictions: np.ndarray, seconds: float) -> None:
        m = Measures.of(y, predictions, OBJECTIVE)
        c = m.counts
        self.counts.append([c.t_p, c.t_n, c.m_p, c.m_n])
        self.seconds.append(seconds)


def run_dataset(
    stream: Stream, chosen: Sequence[System], args: argparse.Namespace, log: Callable[[str], None]
) -> dict[str, Any]:
    """Every system on every order of ``stream``; returns the JSON-able result of the data set."""
    records: dict[str, dict[str, Record]] = {}
    started = time.perf_counter()
    for system in chosen:
        n_orders = len(stream.orders)
        if system.sklearn:
            n_orders = min(n_orders, args.sklearn_permutations)
        t0 = time.perf_counter()
        per_metric = {m: Record() for m in METRICS}
        try:
            system.predict((stream.raw if system.raw else stream.X)[:2], stream.y[:2], stream, "sum")
        except InvalidParameter as exc:  # cannot be built for this d: no row for this data set
            log(f"  {stream.name}: {system.key} skipped ({exc})")
            continue
        for order in stream.orders[:n_orders]:
            X, y = (stream.raw if system.raw else stream.X)[order], stream.y[order]
            if system.passes:  # one call gives every measure's predictions
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    both = system.predict(X, y, stream, "both")
                elapsed = (time.perf_counter() - t) / system.passes
                for metric in METRICS:
                    per_metric[metric].add(y, both[metric], elapsed)
                continue
            for metric in METRICS:
                if system.metric_free and metric == "cost":
                    continue
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    preds = system.predict(X, y, stream, metric)
                elapsed = time.perf_counter() - t
                per_metric[metric].add(y, preds, elapsed)
                if system.metric_free:
                    per_metric["cost"].add(y, preds, elapsed)
        records[system.key] = per_metric
        log(f"  {stream.name}: {system.key} x{n_orders} in {time.perf_counter() - t0:.1f}s")
    for kind in HINDSIGHT if args.hindsight else ():
        t0 = time.perf_counter()
        for eta in PAPER_GRID:
            predict = hindsight_predict(kind, eta)
            per_metric = {m: Record() for m in METRICS}
            for order in stream.orders:
                X, y = stream.X[order], stream.y[order]
                for metric in METRICS:
                    t = time.perf_counter()
                    preds = predict(X, y, stream, metric)
                    per_metric[metric].add(y, preds, time.perf_counter() - t)
            records[f"{kind}@{eta:g}"] = per_metric
        log(f"  {stream.name}: {kind} over {len(PAPER_GRID)} etas in {time.perf_counter() - t0:.1f}s")
    return {
        "name": stream.name,
        "n": stream.n,
        "d": stream.d,
        "positives": int(np.count_nonzero(stream.y == 1)),
        "ratio": stream.ratio,
        "permutations": len(stream.orders),
        "sklearn_permutations": (
            min(len(stream.orders), args.sklearn_permutations) if any(s.sklearn for s in chosen) else 0
        ),
        "seconds": time.perf_counter() - started,
        "records": {
            key: {m: {"counts": r.counts, "seconds": r.seconds} for m, r in per_metric.items()}
            for key, per_metric in records.items()
        },
    }


def cache_path(results_dir: Path, name: str) -> Path:
    return results_dir / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".json")
