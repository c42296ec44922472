"""The nearest-neighbour study's tables (whether ``knn`` members join the default), from the caches of
``python -m bench.quality --only ...`` runs, written into a section of ``docs/ensemble.md``.

Usage: ``python -m bench.quality.neighbours --tuning-dir DIR [--reporting-dir DIR] [--output FILE]``;
each directory holds the result caches of one set (``--results-dir`` of the runs). ``--cost`` measures
instead the cost per label of the default model with and without its kNN member, both paths the
service and the benchmark take, on one seeded stream per dimension (prints a table, writes nothing). Rows: the
:data:`~bench.quality.systems.NEIGHBOUR_ROWS` present in every cache of the set, the first one
(``knn-none``, the defaults without kNN members) the base of the paired differences; then the cost
per label of each row (one predict-and-learn, mean over the data sets).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.compare import compare_lines
from bench.quality.protocol import SETS
from bench.quality.runs import cache_path
from bench.quality.systems import NEIGHBOUR_ROWS, with_neighbours
from bench.report import write_section
from service.learners.inputs import canonical
from service.learners.interface import LearnerInterface
from service.model_config import ModelConfig

SECTION = "neighbours"
KEYS = tuple(f"service:{key}" for key, _, _ in NEIGHBOUR_ROWS)


def load(results_dir: Path, names: Sequence[str]) -> list[dict[str, Any]]:
    """The caches of ``names`` found in ``results_dir``."""
    paths = [cache_path(results_dir, name) for name in names]
    return [json.loads(p.read_text()) for p in paths if p.exists()]


def us_per_label(results: Sequence[dict[str, Any]], key: str) -> float:
    """One predict-and-learn, in microseconds: the mean over data sets (and both measures' passes)."""
    per = [
        1e6 * np.mean([np.mean(r["records"][key][m]["seconds"]) for m in ("sum", "cost")]) / r["n"]
        for r in results
    ]
    return float(np.mean(per))


def groups(title: str, results: Sequence[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The results in groups that ran the same rows (in set order), one table each."""
    out: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in results:
        out.setdefault(tuple(k for k in KEYS if k in r["records"]), []).append(r)
    return [(title, rs) for rs in out.values()]


def table(title: str, results: Sequence[dict[str, Any]]) -> list[str]:
    keys = [k for k in KEYS if all(k in r["records"] for r in results)]
    labels = {f"service:{key}": label for key, label, _ in NEIGHBOUR_ROWS}
    lines = [f"#### {title}: {', '.join(r['name'] for r in results)}", ""]
    lines += compare_lines(results, keys)
    lines += ["", "| row | what | us/label |", "|---|---|---:|"]
    lines += [f"| {k} | {labels[k]} | {us_per_label(results, k):.1f} |" for k in keys]
    return lines


def _stream(n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw rows of unequal spreads; the label: the sign of ``x_0 x_1`` plus noise."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, size=d)
    return X, np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1, -1)


def _per_label(learner: LearnerInterface, X: np.ndarray, y: np.ndarray, service: bool) -> float:
    """Microseconds a label: ``score_unchecked`` then ``learn_unchecked`` per row (what a
    prediction and its label cost in the service), or one ``run`` (the benchmark's path)."""
    vectors = [canonical(x, X.shape[1]) for x in X]
    start = time.perf_counter()
    if service:
        for vector, label in zip(vectors, y, strict=True):
            learner.score_unchecked(vector)
            learner.learn_unchecked(vector, int(label))
    else:
        learner.run(X, y)
    return 1e6 * (time.perf_counter() - start) / len(y)


def cost_lines(dims: Sequence[int], n: int, repeats: int) -> list[str]:
    """Median over ``repeats`` (alternating which goes first) of each path's cost per label."""
    lines = [
        "| d | predict + learn, without kNN (us) | with kNN | ratio | run(), without | with | ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for d in dims:
        config = ModelConfig(n_features=d)
        X, y = _stream(n, d)
        builders: dict[str, Callable[[], LearnerInterface]] = {
            "without": partial(with_neighbours, config, None),
            "with": config.build_learner,
        }
        for build in builders.values():
            build().run(X[:5], y[:5])  # compiled before the clock starts
        times: dict[tuple[str, bool], list[float]] = {}
        for rep in range(repeats):
            for name in ("without", "with") if rep % 2 == 0 else ("with", "without"):
                for service in (True, False):
                    times.setdefault((name, service), []).append(_per_label(builders[name](), X, y, service))
        m = {key: statistics.median(values) for key, values in times.items()}
        a, b, c, e = m["without", True], m["with", True], m["without", False], m["with", False]
        lines.append(f"| {d} | {a:.0f} | {b:.0f} | {b / a:.2f} | {c:.0f} | {e:.0f} | {e / c:.2f} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.neighbours", description=__doc__.split("\n")[0])
    p.add_argument("--cost", action="store_true", help="measure the cost per label instead")
    p.add_argument("--dims", default="3,15,30,64", help="--cost: the dimensions")
    p.add_argument("--labels", type=int, default=1500, help="--cost: labels per stream")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tuning-dir", type=Path, default=None)
    p.add_argument("--reporting-dir", type=Path, default=None)
    p.add_argument(
        "--output", type=Path, default=None, help="markdown file whose 'neighbours' section is written"
    )
    p.add_argument("--command", default="", help="the runs' commands, quoted in the section")
    args = p.parse_args(argv)
    if args.cost:
        dims = [int(d) for d in args.dims.split(",")]
        print("\n".join(cost_lines(dims, args.labels, args.repeats)), flush=True)
        return 0
    if args.tuning_dir is None:
        p.error("--tuning-dir is required (or --cost)")
    lines = [
        "Generated by `python -m bench.quality.neighbours` from the caches of `python -m bench.quality "
        "--no-peers --only ...` runs" + (f" ({args.command})" if args.command else "") + "; do not edit by "
        "hand. Mean sum % (± the sample std over orders) and cost per 1000 examples; the differences are "
        "paired (same orders) against `knn-none`, the defaults without kNN members. us/label is the "
        "runs' own clock on a shared 2-core machine under other load: it orders nothing between rows.",
        "",
    ]
    sets = [("Tuning set (the choice was made here)", args.tuning_dir, "tuning")]
    if args.reporting_dir is not None:
        sets.append(("Reporting set (out of sample)", args.reporting_dir, "reporting"))
    for title, directory, name in sets:
        for heading, results in groups(title, load(directory, SETS[name])):
            lines += [*table(heading, results), ""]
    text = "\n".join(lines).rstrip()
    print(text)
    if args.output is not None:
        write_section(args.output, SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
