"""Why the default roster stops at d = 64: the members it leaves out, put back on the wider tuning data.

    .venv/bin/python -m bench.quality.wide [--permutations 3] [--small-permutations 10]
                                           [--output docs/benchmarks.md]

Above ``d = 64`` (:mod:`service.learners.roster`) the default ensemble runs the linear family over
the L2-normalised input alone: no standardised input, no nearest neighbours, no forest. This study
runs, on every data set of the tuning set wider than that, the default roster and the rosters that
put the left-out members back, one step at a time:

- *+ standardised input*: the linear family over online standardisation too (20 members);
- *+ kNN*: and the nearest neighbours over the standardised input (21);
- *+ forest*: and the forest over each input form (23): the roster of ``d <= 64`` (no quadratic
  family, which stops at ``d <= 32``).

Each roster runs as the service runs the defaults (raw rows in, the ensemble normalising for its
members, eta auto, the Laplace rho for sum and rho = 9 for cost) over the seeded orders of the quality
benchmark. Reported: the mean sum and cost per 1000 over orders with their sample std, the mean paired
difference to the default roster (same orders), and the CPU time per label (predict and learn, both
measures' passes) against the default roster's. Tuning data only: nothing here reads the reporting set.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.quality.combiners import measure
from bench.quality.protocol import METRICS, SEED, TUNING, Stream, load_stream
from bench.quality.systems import default_ensemble
from bench.report import cpu_model, publish
from service.learners import ALGORITHMS, EtaGrid
from service.learners.roster import (
    FOREST,
    FOREST_OPTIONS,
    NEIGHBOURS,
    NEIGHBOURS_OPTIONS,
    STANDARD_MAX_FEATURES,
    Family,
)
from service.model_config import ModelConfig

SECTION = "quality-wide"


@dataclass(frozen=True)
class Roster:
    """A roster of the study: the input forms, and whether the neighbours and the forest join."""

    label: str
    forms: tuple[str, ...]
    neighbours: bool = False
    forest: bool = False


ROSTERS = (
    Roster("default roster (linear over L2)", ("l2",)),
    Roster("+ standardised input", ("l2", "standard")),
    Roster("+ kNN over standardised input", ("l2", "standard"), neighbours=True),
    Roster("+ forest over both inputs", ("l2", "standard"), neighbours=True, forest=True),
)


def ensemble(roster: Roster, d: int, metric: str) -> EtaGrid:
    """The default model's ensemble at dimension ``d`` for ``metric`` with ``roster``'s members: what
    :meth:`ModelConfig.build_learner` builds, its input forms and rate-free families replaced."""
    forests: list[Family] = []  # in the roster's order: the forest, then the kNN
    if roster.forest:
        forests.append((ALGORITHMS[FOREST], dict(FOREST_OPTIONS)))
    if roster.neighbours:
        forests.append((ALGORITHMS[NEIGHBOURS], dict(NEIGHBOURS_OPTIONS)))
    return default_ensemble(ModelConfig(n_features=d, objective=metric), forests, roster.forms)


@dataclass(frozen=True)
class Run:
    """One roster on one data set: per measure, the value of every order; CPU seconds per label."""

    values: dict[str, list[float]]
    us_per_label: float
    members: int


def run(roster: Roster, stream: Stream) -> Run:
    values: dict[str, list[float]] = {m: [] for m in METRICS}
    members, start = 0, time.process_time()
    for metric in METRICS:
        for order in stream.orders:
            learner = ensemble(roster, stream.d, metric)
            members = len(learner.configs)
            y = stream.y[order]
            values[metric].append(measure(y, learner.run(stream.raw[order], y).predictions, metric))
    seconds = time.process_time() - start
    return Run(values, 1e6 * seconds / (len(METRICS) * len(stream.orders) * stream.n), members)


def table(results: Sequence[tuple[Stream, list[Run]]]) -> list[str]:
    lines = [
        "| data set | d | rows | orders | roster | members | sum % | sum - default | cost/1000 "
        "| cost - default | us/label | CPU vs default |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for stream, runs in results:
        base = runs[0]
        for roster, r in zip(ROSTERS, runs, strict=True):
            cells = []
            for metric in METRICS:
                v = np.asarray(r.values[metric])
                diff = v - np.asarray(base.values[metric])
                cells.append(f"{v.mean():.2f} ± {_std(v):.2f}")
                cells.append("—" if r is base else f"{diff.mean():+.2f} ± {_std(diff):.2f}")
            ratio = "—" if r is base else f"{r.us_per_label / base.us_per_label:.1f}x"
            lines.append(
                f"| {stream.name} | {stream.d} | {stream.n:,} | {len(stream.orders)} | {roster.label} "
                f"| {r.members} | {' | '.join(cells)} | {r.us_per_label:.1f} | {ratio} |"
            )
    return lines


def summary(results: Sequence[tuple[Stream, list[Run]]]) -> list[str]:
    """Per roster, the mean over data sets of the paired differences and of the CPU ratio."""
    out = []
    for k, roster in enumerate(ROSTERS[1:], start=1):
        gains = {
            m: np.mean([np.mean(np.subtract(r[k].values[m], r[0].values[m])) for _, r in results])
            for m in METRICS
        }
        cpu = np.mean([r[k].us_per_label / r[0].us_per_label for _, r in results])
        out.append(
            f"- {roster.label}: mean sum {gains['sum']:+.2f} points, mean cost/1000 {gains['cost']:+.2f}, "
            f"at {cpu:.1f}x the CPU per label (means over the {len(results)} data sets)."
        )
    return out


def _std(v: np.ndarray) -> float:
    return float(np.std(v, ddof=1)) if v.shape[0] > 1 else 0.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.wide", description=__doc__.splitlines()[0])
    p.add_argument(
        "datasets", nargs="*", help=f"default: the tuning data sets of d > {STANDARD_MAX_FEATURES}"
    )
    p.add_argument("--permutations", type=int, default=3)
    p.add_argument("--small-permutations", type=int, default=10)
    p.add_argument("--output", default=None, help="write the section into this markdown file")
    args = p.parse_args(argv)
    args.seed, args.positive_label = SEED, None
    streams = [load_stream(name, args) for name in args.datasets or TUNING]
    if not args.datasets:
        streams = [s for s in streams if s.d > STANDARD_MAX_FEATURES]
    results = []
    for stream in streams:
        runs = [run(roster, stream) for roster in ROSTERS]
        results.append((stream, runs))
        print(f"{stream.name}: done", file=sys.stderr, flush=True)
    named = " ".join(args.datasets)
    text = [
        "## Members above d = 64 (`python -m bench.quality.wide`)",
        "",
        f"Command: `python -m bench.quality.wide {named + ' ' if named else ''}--permutations "
        f"{args.permutations} --small-permutations {args.small_permutations}`. Machine: {cpu_model()}. "
        f"Above d = {STANDARD_MAX_FEATURES} the default ensemble runs the linear family over the "
        "L2-normalised input alone; here the tuning data sets wider than that run the rosters that "
        "put the left-out members back, one step at a time (raw rows in, the ensemble normalising for "
        "its members, as the service runs the defaults). *sum - default*, *cost - default*: the mean "
        "paired difference (same orders) to the default roster ± its sample std over orders; us/label: "
        "CPU time of one predict and learn, over both measures' passes.",
        "",
        *table(results),
        "",
        *summary(results),
    ]
    return publish("\n".join(text), args.output, SECTION)


if __name__ == "__main__":
    sys.exit(main())
