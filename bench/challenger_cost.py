"""What a challenger costs per label and per prediction: a model with one challenger of its own
configuration (the costliest challenger that is "one model") against the same model alone.

    .venv/bin/python -m bench.challenger_cost [--repeats 5] [--dims 8,64] [--labels 2000]
                                              [--output docs/benchmarks.md]

Both are :class:`service.engine.runtime.ModelRuntime` s of the service's default configuration
(``ModelConfig(n_features=d)``), fed the same seeded log entries through ``apply`` (the follower's
path: the features, the champion's update and measures, the drift detector, and the challenger's
update); predictions go through ``score`` and, with the challenger, ``shadow`` (what ``/predict``
adds per instance). Each repeat builds fresh runtimes and times baseline and candidate back to back,
alternating which goes first; the table gives the median per-label time over repeats and the median
of the per-repeat ratios candidate / baseline with their range. The goal: a ratio of at most 2 (one
challenger costs at most one model).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np

from bench.report import cpu_model, write_section
from model_store import Example, LogEntry
from service.challengers import CHALLENGER_EVENT
from service.engine.runtime import ModelRuntime
from service.model_config import ModelConfig

SECTION = "challenger-cost"
BUDGET = 512 * 2**20


def entries(d: int, n: int, seed: int, first: int) -> list[LogEntry]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0.2, 1, -1)
    return [
        LogEntry(
            f"{1000 + first + i}-0",
            first + i,
            f"p{i}",
            Example.sparse(np.arange(d), X[i]),
            int(y[i]),
            0,
            1.0,
            2.0,
        )
        for i in range(n)
    ]


def runtime(d: int, challenger: bool) -> ModelRuntime:
    config = ModelConfig(n_features=d).pinned(BUDGET)
    rt = ModelRuntime("m", 1, config, BUDGET, window=1000)
    if challenger:
        body = {"op": "put", "id": "twin", "config": config.model_dump_json(), "limit": 1}
        rt.apply(
            LogEntry(
                "999-0", 1, "", None, 0, 0, 1.0, 2.0, kind=CHALLENGER_EVENT, body=json.dumps(body).encode()
            )
        )
    return rt


def time_labels(rt: ModelRuntime, stream: list[LogEntry]) -> float:
    start = time.perf_counter()
    for entry in stream:
        rt.apply(entry)
    return (time.perf_counter() - start) / len(stream)


def time_predictions(rt: ModelRuntime, stream: list[LogEntry]) -> float:
    vectors = [rt.features.vector(e.example) for e in stream if e.example is not None]
    start = time.perf_counter()
    for vector in vectors:
        label = 1 if rt.score(vector) >= 0.0 else -1
        rt.shadow(vector, label)
    return (time.perf_counter() - start) / len(vectors)


def measure(d: int, n: int, repeats: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        k: [] for k in ("label_base", "label_with", "predict_base", "predict_with")
    }
    warm = runtime(d, True)  # compiled code loaded before any clock starts
    time_labels(warm, entries(d, 50, 99, 2))
    for r in range(repeats):
        for challenger in (False, True) if r % 2 == 0 else (True, False):
            rt = runtime(d, challenger)
            first = 2 if challenger else 1
            key = "with" if challenger else "base"
            out[f"label_{key}"].append(time_labels(rt, entries(d, n, r, first)))
            out[f"predict_{key}"].append(time_predictions(rt, entries(d, n, 1000 + r, 1)))
    return out


def _ratio(with_: list[float], base: list[float]) -> str:
    ratios = [w / b for w, b in zip(with_, base, strict=True)]
    return f"{statistics.median(ratios):.2f}x [{min(ratios):.2f} to {max(ratios):.2f}]"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dims", default="8,64")
    p.add_argument("--labels", type=int, default=2000)
    p.add_argument("--output", default=None)
    args = p.parse_args(argv)
    load_before = os.getloadavg()[0]
    rows = []
    for d in (int(v) for v in args.dims.split(",")):
        m = measure(d, args.labels, args.repeats)
        print(f"d={d}: {m}", file=sys.stderr)
        med = {k: statistics.median(v) * 1e6 for k, v in m.items()}
        rows.append(
            f"| {d} | {med['label_base']:.1f} | {med['label_with']:.1f} "
            f"| {_ratio(m['label_with'], m['label_base'])} | {med['predict_base']:.1f} "
            f"| {med['predict_with']:.1f} | {_ratio(m['predict_with'], m['predict_base'])} |"
        )
    command = ".venv/bin/python -m bench.challenger_cost " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    text = "\n".join(
        [
            "## Cost of a challenger (`python -m bench.challenger_cost`)",
            "",
            f"Command: `{command.strip()}`. Machine: {cpu_model(platform.processor())}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}. Baseline: the default model "
            "(`ModelConfig(n_features=d)`) "
            "alone; candidate: the same with one challenger of its own configuration. Per label: "
            f"`ModelRuntime.apply` over {args.labels:,} log entries (the follower's path); per prediction: "
            "`score`, plus `shadow` for the candidate (the challenger's label only: `predict_unchecked`, "
            "whose hedge vote stops asking members once the rest cannot change the sign). Fresh runtimes "
            f"each repeat, timed back to back in alternating order; {args.repeats} repeats; median "
            "per-label time, and the median of the per-repeat ratios with their range. Goal: at most 2x "
            "(one challenger costs at most one model). The machine is shared: 1-minute load average "
            f"{load_before:.1f} before the run and {os.getloadavg()[0]:.1f} after it, on "
            f"{os.cpu_count()} cores, so absolute times vary between runs more than the ratios do.",
            "",
            "| d | µs/label: alone | with a challenger | label ratio | µs/prediction: alone "
            "| with a challenger | prediction ratio |",
            "|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
    print(text)
    if args.output:
        write_section(args.output, SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
