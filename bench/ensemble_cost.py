"""Cost per label of the ``eta="auto"`` default with nonlinear members (``auto_members="all"``)
against the linear-only default, the named baseline, in the same run.

    .venv/bin/python -m bench.ensemble_cost [--repeats 5] [--dims 2,8,16,32,33] [--output docs/benchmarks.md]

Both models are built as the service builds them (``ModelConfig(n_features=d, ...).build_learner()``:
intercept, ``loss`` and ``eta`` auto) and fed the same seeded stream of unit-L2 rows (a
non-linearly separable label: the sign of ``x_0 x_1``). Two call paths are timed per label:

- ``learn``: one ``learn(x, y)`` call per label, what the service pays per ``POST /labels``;
- ``run``: progressive validation over the whole stream in compiled loops (the benchmark path).

Each repeat builds fresh learners (their compiled code loaded before the clock starts) and times
baseline and candidate back to back (alternating which goes first); the table gives the median
over repeats of the per-label time and of the per-repeat ratio candidate / baseline, with the
ratio's range. ``d`` above the threshold (``NONLINEAR_MAX_FEATURES``) must show ratio ~1: the
member set is the linear one.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from bench.report import cpu_model, write_section
from service.learners import NONLINEAR_MAX_FEATURES, OnlineLearner
from service.model_config import ModelConfig

SECTION = "ensemble-cost"
BASELINE = "linear"
CANDIDATE = "all"


def stream(d: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] * X[:, min(1, d - 1)] > 0.1, 1, -1)
    return X, y


def learner(d: int, members: str) -> OnlineLearner:
    return ModelConfig(n_features=d, auto_members=members).build_learner()


def per_label_learn(d: int, members: str, X: np.ndarray, y: np.ndarray) -> float:
    model = learner(d, members)
    start = time.perf_counter()
    for i in range(X.shape[0]):
        model.learn(X[i], int(y[i]))
    return (time.perf_counter() - start) / X.shape[0]


def per_label_run(d: int, members: str, X: sp.csr_matrix, y: np.ndarray) -> float:
    model = learner(d, members)
    start = time.perf_counter()
    model.run(X, y)
    return (time.perf_counter() - start) / X.shape[0]


def measure(dims: Sequence[int], repeats: int, n_learn: int, n_run: int) -> dict[int, dict[str, list[float]]]:
    """``{d: {"learn:linear": [seconds per label, one per repeat], "learn:all": ..., "run:...": ...}}``."""
    out: dict[int, dict[str, list[float]]] = {}
    for d in dims:
        X, y = stream(d, max(n_learn, n_run))
        csr = sp.csr_matrix(X[:n_run])
        for members in (BASELINE, CANDIDATE):  # compile / load every kernel before timing
            per_label_learn(d, members, X[:20], y[:20])
            per_label_run(d, members, csr[:20], y[:20])
        times: dict[str, list[float]] = {
            f"{p}:{m}": [] for p in ("learn", "run") for m in (BASELINE, CANDIDATE)
        }
        for r in range(repeats):  # alternate which goes first, so that drift favours neither
            for members in (BASELINE, CANDIDATE) if r % 2 == 0 else (CANDIDATE, BASELINE):
                times[f"learn:{members}"].append(per_label_learn(d, members, X[:n_learn], y[:n_learn]))
                times[f"run:{members}"].append(per_label_run(d, members, csr, y[:n_run]))
        out[d] = times
        print(f"d = {d}: done", file=sys.stderr, flush=True)
    return out


def report(
    results: dict[int, dict[str, list[float]]], command: str, repeats: int, n_learn: int, n_run: int
) -> str:
    lines = [
        "## Cost per label of nonlinear members in the default (`python -m bench.ensemble_cost`)",
        "",
        f"Command: `{command}`. Machine: {cpu_model(platform.processor())}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}. Baseline: the linear-only default (`auto_members: "
        f'"linear"`, 10 ACOG members); candidate: `auto_members: "all"` (for d <= {NONLINEAR_MAX_FEATURES}, '
        "10 more members: ACOG-diag over the quadratic features). Same seeded unit-L2 stream, fresh "
        "learners each repeat, timed back to back in alternating order; "
        f"{repeats} repeats; `learn`: one call per label over {n_learn} labels (the "
        f"service's path), `run`: the compiled stream path over {n_run} labels. Median over repeats "
        "(ratio: median of the per-repeat ratios, range in brackets).",
        "",
        "| d | members | learn µs/label: linear | learn: all | learn ratio | run µs/label: linear | run: all "
        "| run ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for d, t in results.items():
        members = 20 if d <= NONLINEAR_MAX_FEATURES else 10
        cells = [str(d), str(members)]
        for path in ("learn", "run"):
            base, cand = t[f"{path}:{BASELINE}"], t[f"{path}:{CANDIDATE}"]
            ratios = [c / b for b, c in zip(base, cand, strict=True)]
            cells += [
                f"{1e6 * statistics.median(base):.1f}",
                f"{1e6 * statistics.median(cand):.1f}",
                f"{statistics.median(ratios):.2f}x [{min(ratios):.2f} to {max(ratios):.2f}]",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.ensemble_cost", description=(__doc__ or "").split("\n")[0]
    )
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dims", default=f"2,8,16,{NONLINEAR_MAX_FEATURES},{NONLINEAR_MAX_FEATURES + 1}")
    p.add_argument("--learn-labels", type=int, default=1000)
    p.add_argument("--run-labels", type=int, default=5000)
    p.add_argument("--output", default=None, help="write the section into this markdown file")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be >= 1")
    try:
        dims = [int(v) for v in args.dims.split(",")]
    except ValueError:
        p.error(f"--dims must be comma-separated integers, got {args.dims!r}")
    if any(d < 1 for d in dims):
        p.error("--dims must be >= 1")
    shown = list(sys.argv[1:] if argv is None else argv)
    command = " ".join([".venv/bin/python -m bench.ensemble_cost", *map(shlex.quote, shown)])
    results = measure(dims, args.repeats, args.learn_labels, args.run_labels)
    text = report(results, command, args.repeats, args.learn_labels, args.run_labels)
    print(text)
    if args.output:
        write_section(args.output, SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
