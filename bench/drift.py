"""Drift detection on seeded streams with one abrupt change at a known point.

    .venv/bin/python -m bench.drift [--seeds 0,1,2,3,4] [--stationary 100000] [--after 5000]
                                    [--tuning] [--output docs/benchmarks.md]

Each run feeds the service's default model with ``normalize: "none"`` (``ModelConfig(n_features=d,
normalize="none")``: every generator's features are of unit scale; through the learner's
progressive-validation path: predict each row, then learn it) ``stationary`` labels of one
concept, then ``after`` labels of another. The model's loss on each label (its prediction before
learning it, weighted by class: :class:`service.drift.DriftMonitor`, the monitor every model runs)
goes to the service's Page-Hinkley test and, as peers on the same losses, to river's
``PageHinkley(mode="up")`` and ``ADWIN`` with their documented defaults.

- **false alarm**: a detection among the ``stationary`` labels (counted per 100,000 of them);
- **delay**: labels from the change to the first detection at or after it; none within
  ``after`` labels is a miss (counted at ``after`` in the median and reported).

Three generators:

- ``sea``: Street & Kim's SEA concepts scaled to ``[0, 1]^3``: positive when
  ``10 (x0 + x1) > theta``, 10% label noise; ``theta`` moves from 9 to 7 (tuning: 8 to 9.5);
- ``hyperplane``: a hyperplane in ``[0, 1]^10``, positive when ``w . x > w . 1 / 2``, 5% noise,
  ``w ~ U[0, 1]``; at the change the signs of 5 of the weights flip (tuning: 3 of them);
- ``gaussian``: 20% positives, negatives ``N(0, I_5)``, positives ``N(2 e_0, I_5)``; at the
  change the positives' mean moves to ``2 e_1`` (tuning: ``2.5 e_0`` to ``2.5 e_2``, 30%
  positives).

``--tuning`` runs the tuning variants on seeds 100-104 and prints, for a grid of the detector's
``delta`` and ``lambda``, the false alarms and the median delay: :data:`service.drift.DELTA` and
``LAMBDA`` were chosen there (the smallest median delay with no change missed and at most 0.2
false alarms per 100,000 stationary labels); the reported table uses seeds 0-4 and the reported
variants, which the thresholds never saw.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bench.report import cpu_model, write_section
from service.drift import DELTA, LAMBDA, MIN_LABELS, DriftMonitor, PageHinkley
from service.model_config import ModelConfig

SECTION = "drift"
Stream = tuple[np.ndarray, np.ndarray]


def _noisy(rng: np.random.Generator, y: np.ndarray, noise: float) -> np.ndarray:
    flip = rng.random(y.shape[0]) < noise
    return np.where(flip, -y, y).astype(np.int64)


def sea(seed: int, n_before: int, n_after: int, tuning: bool = False) -> Stream:
    rng = np.random.default_rng(seed)
    before, after = (8.0, 9.5) if tuning else (9.0, 7.0)
    X = rng.uniform(0.0, 1.0, size=(n_before + n_after, 3))
    theta = np.where(np.arange(X.shape[0]) < n_before, before, after) / 10.0
    y = np.where(X[:, 0] + X[:, 1] > theta, 1, -1)
    return X, _noisy(rng, y, 0.10)


def hyperplane(seed: int, n_before: int, n_after: int, tuning: bool = False) -> Stream:
    rng = np.random.default_rng(seed)
    d, flipped = 10, (3 if tuning else 5)
    w = rng.uniform(0.0, 1.0, size=d)
    w_after = w.copy()
    w_after[rng.choice(d, size=flipped, replace=False)] *= -1.0
    X = rng.uniform(0.0, 1.0, size=(n_before + n_after, d))
    y = np.empty(X.shape[0], dtype=np.int64)
    for part, weights in ((slice(0, n_before), w), (slice(n_before, None), w_after)):
        y[part] = np.where(X[part] @ weights > weights.sum() / 2, 1, -1)
    return X, _noisy(rng, y, 0.05)


def gaussian(seed: int, n_before: int, n_after: int, tuning: bool = False) -> Stream:
    rng = np.random.default_rng(seed)
    d = 5
    share, scale, moved = (0.3, 2.5, 2) if tuning else (0.2, 2.0, 1)
    n = n_before + n_after
    y = np.where(rng.random(n) < share, 1, -1).astype(np.int64)
    X = rng.normal(size=(n, d))
    mean_before, mean_after = np.zeros(d), np.zeros(d)
    mean_before[0], mean_after[moved] = scale, scale
    pos = y == 1
    early = np.arange(n) < n_before
    X[pos & early] += mean_before
    X[pos & ~early] += mean_after
    return X, y


GENERATORS: dict[str, Callable[..., Stream]] = {"sea": sea, "hyperplane": hyperplane, "gaussian": gaussian}


@dataclass(frozen=True)
class Run:
    generator: str
    seed: int
    false_alarms: dict[str, int]
    delay: dict[str, int | None]
    """Labels from the change to the first detection (None: missed)."""
    error_before: float
    error_after: float
    seconds: float


def losses(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, DriftMonitor]:
    """The model's weighted losses on the stream (prequential), and a fresh monitor."""
    config = ModelConfig(n_features=X.shape[1], normalize="none")
    result = config.build_learner().run(X, y)
    monitor = DriftMonitor(config.objective, config.alpha_p, config.c_p)
    predictions = result.predictions.astype(np.int64)
    weights = np.where(y == 1, monitor.w_pos, monitor.w_neg)
    return np.where(predictions != y, weights, 0.0), monitor


def detections(name: str, loss: np.ndarray, monitor: DriftMonitor) -> list[int]:
    """0-based positions of the labels at which the detector ``name`` signalled."""
    found = []
    if name == "service":
        ours = monitor.detector
        for i, x in enumerate(loss.tolist()):
            if ours.update(x, i + 1):
                found.append(i)
        return found
    from river import drift  # a peer: bench only

    detector = drift.PageHinkley(mode="up") if name == "river PageHinkley" else drift.ADWIN()
    for i, x in enumerate(loss.tolist()):
        detector.update(x)
        if detector.drift_detected:
            found.append(i)
    return found


DETECTORS = ("service", "river PageHinkley", "river ADWIN")


def run_one(generator: str, seed: int, n_before: int, n_after: int, tuning: bool) -> Run:
    start = time.perf_counter()
    X, y = GENERATORS[generator](seed, n_before, n_after, tuning)
    loss, monitor = losses(X, y)
    false_alarms: dict[str, int] = {}
    delay: dict[str, int | None] = {}
    for name in DETECTORS:
        found = detections(name, loss, monitor)
        false_alarms[name] = sum(i < n_before for i in found)
        late = [i - n_before for i in found if i >= n_before]
        delay[name] = late[0] if late else None
    window = slice(n_before - 5000, n_before)
    return Run(
        generator,
        seed,
        false_alarms,
        delay,
        error_before=float((loss[window] > 0).mean()),
        error_after=float((loss[n_before : n_before + 1000] > 0).mean()),
        seconds=time.perf_counter() - start,
    )


def _median_delay(delays: Sequence[int | None], n_after: int) -> str:
    values = [n_after if d is None else d for d in delays]
    missed = sum(d is None for d in delays)
    text = f"{statistics.median(values):.0f}"
    return text + (f" ({missed} missed)" if missed else "")


def _delay(delay: int | None) -> str:
    return "missed" if delay is None else str(delay)


def report(runs: Sequence[Run], args: argparse.Namespace, command: str) -> str:
    lines = [
        "## Drift detection (`python -m bench.drift`)",
        "",
        f"Command: `{command}`. Machine: {cpu_model(platform.processor())}, {os.cpu_count()} cores, "
        f'Python {platform.python_version()}. The service\'s default model with `normalize: "none"` '
        "(the generators' features are of unit scale) learns each stream (predict, then learn, row by "
        "row); its weighted loss on each label (the prediction before "
        f"learning it) feeds the service's one-sided Page-Hinkley test (delta = {DELTA:g}, "
        f"lambda = {LAMBDA:g}, at least {MIN_LABELS} labels between alarms; the module docstring of "
        "`service/drift.py` states the test) and, as peers on the same losses, river's "
        '`PageHinkley(mode="up")` and `ADWIN()` with their defaults. Each stream: '
        f"{args.stationary:,} labels of one concept, then {args.after:,} of another. False alarms: "
        "detections among the stationary labels, per 100,000 of them. Delay: labels from the change "
        f"to the first detection; a stream with none within {args.after:,} labels is a miss (counted "
        f"as {args.after:,} in the median). Seeds {','.join(map(str, args.seeds))}"
        + (
            " (the tuning variants)"
            if args.tuning
            else "; the thresholds were chosen on other "
            "variants of the generators and seeds 100-104 (`--tuning`)"
        )
        + ". Error: the model's error rate over the 5,000 labels before the change and the 1,000 after.",
        "",
        "| generator | seeds | error before | error after | service: delay (median) | service: false alarms "
        "/ 100k | river PH: delay | river PH: false alarms / 100k | river ADWIN: delay | river ADWIN: false "
        "alarms / 100k |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    groups = [(g, [r for r in runs if r.generator == g]) for g in GENERATORS]
    groups.append(("all", list(runs)))
    for name, group in groups:
        if not group:
            continue
        stationary = len(group) * args.stationary
        cells = []
        for detector in DETECTORS:
            delays = [r.delay[detector] for r in group]
            fa = sum(r.false_alarms[detector] for r in group) * 100_000 / stationary
            cells += [_median_delay(delays, args.after), f"{fa:.2f}"]
        lines.append(
            f"| {name} | {len(group)} | {statistics.mean(r.error_before for r in group):.3f} "
            f"| {statistics.mean(r.error_after for r in group):.3f} | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        "Per stream (service detector): "
        + "; ".join(
            f"{r.generator}/{r.seed}: delay {_delay(r.delay['service'])}, {r.false_alarms['service']} false"
            for r in runs
        )
        + ".",
    ]
    return "\n".join(lines)


GRID_DELTA = (0.03, 0.05, 0.075, 0.1)
GRID_LAMBDA = (8.0, 10.0, 12.0, 15.0, 20.0, 25.0)


def tune(args: argparse.Namespace) -> int:
    """The grid over the tuning variants (see the module docstring)."""
    streams = []
    for generator in args.generators.split(","):
        for seed in args.seeds:
            X, y = GENERATORS[generator](seed, args.stationary, args.after, True)
            streams.append(losses(X, y)[0].tolist())
    print("| delta | lambda | false alarms / 100k | median delay | missed |")
    print("|---:|---:|---:|---:|---:|")
    for delta in GRID_DELTA:
        for threshold in GRID_LAMBDA:
            false_alarms, delays = 0, []
            for loss in streams:
                detector = PageHinkley(delta=delta, threshold=threshold)
                found = [i for i, x in enumerate(loss) if detector.update(x, i + 1)]
                false_alarms += sum(i < args.stationary for i in found)
                late = [i - args.stationary for i in found if i >= args.stationary]
                delays.append(late[0] if late else None)
            fa = false_alarms * 100_000 / (len(streams) * args.stationary)
            missed = sum(d is None for d in delays)
            median = _median_delay(delays, args.after)
            print(f"| {delta:g} | {threshold:g} | {fa:.2f} | {median} | {missed} |")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=lambda s: [int(v) for v in s.split(",")], default=None)
    p.add_argument("--stationary", type=int, default=100_000)
    p.add_argument("--after", type=int, default=5_000)
    p.add_argument("--generators", default=",".join(GENERATORS))
    p.add_argument("--tuning", action="store_true", help="the tuning variants, on seeds 100-104")
    p.add_argument("--output", default=None, help="write the table into this markdown file's section")
    args = p.parse_args(argv)
    if args.seeds is None:
        args.seeds = [100, 101, 102, 103, 104] if args.tuning else [0, 1, 2, 3, 4]
    if args.tuning:
        return tune(args)
    runs = []
    for generator in args.generators.split(","):
        for seed in args.seeds:
            r = run_one(generator, seed, args.stationary, args.after, args.tuning)
            print(
                f"{generator} seed {seed}: error {r.error_before:.3f} -> {r.error_after:.3f}, "
                f"delay {r.delay}, false alarms {r.false_alarms} ({r.seconds:.1f} s)",
                file=sys.stderr,
            )
            runs.append(r)
    command = ".venv/bin/python -m bench.drift " + shlex.join(argv if argv is not None else sys.argv[1:])
    text = report(runs, args, command.strip())
    print(text)
    if args.output:
        write_section(args.output, SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
