"""The forest learner (``amf``) against river's ``forest.AMFClassifier``, the named baseline, same run.

    .venv/bin/python -m bench.forest [--repeats 3] [--output docs/benchmarks.md]

Both forests have ten trees (river's defaults otherwise: ``step=1``, ``dirichlet=0.5``, aggregation
on, ``split_pure=False``; ours has the same defaults and its 4096-node budget) and run
predict-then-learn over the same rows, standardised with each stream's mean and deviation (how the
peers of ``bench.quality`` get their features). Each repeat draws a row order and a seed for both
forests, builds fresh models (their compiled code loaded before the clock starts) and times, in
alternating order:

- ``amf run``: ``Learner.run``, the compiled stream path (input checks and the CSR copy included);
- ``amf learn``: a ``score(x)`` then a ``learn(x, y)`` call per label, the service's two calls (a
  prediction, then its label), as river predicts then learns;
- ``river``: ``predict_proba_one`` then ``learn_one`` per label, the rows already ``{j: x_j}``
  dicts before the clock starts;
- ``defaults``: the default model of the service (``ModelConfig(n_features=d).build_learner()``),
  a ``score`` then a ``learn`` per label (the service scores a row when it is predicted and learns
  it when its label comes, two calls), for the cost per label of what most users run.

Times are the process's CPU time (``time.process_time``), not wall time: on a shared machine the
wall clock also counts the time other processes hold the cores, which no two paths share alike.
The table gives the median over repeats of the CPU time per label with its range, the per-repeat
speed-up ``river / amf`` (median and range), and the quality of both forests on the same
predictions: accuracy at ``P(+|x) >= 1/2`` and the AUC of ``P(+|x)``, mean and range over repeats.
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
from dataclasses import dataclass, field

import numpy as np

from bench.report import cpu_model, package_versions, write_section
from service.datasets import load
from service.learners import create
from service.model_config import ModelConfig

SECTION = "forest"
TREES = 10


@dataclass
class Stream:
    name: str
    X: np.ndarray
    y: np.ndarray


@dataclass
class Results:
    seconds: dict[str, list[float]] = field(default_factory=dict)  # path -> per-label seconds per repeat
    accuracy: dict[str, list[float]] = field(default_factory=dict)
    auc: dict[str, list[float]] = field(default_factory=dict)

    def add(self, table: dict[str, list[float]], key: str, value: float) -> None:
        table.setdefault(key, []).append(value)


def standardised(X: np.ndarray) -> np.ndarray:
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def streams(rows: int) -> list[Stream]:
    """river's phishing (1,250 x 9) and a seeded 32-feature stream whose label is the norm."""
    phishing = load("river:phishing")
    out = [Stream("phishing (9 features)", standardised(np.asarray(phishing.X.todense())), phishing.y)]
    rng = np.random.default_rng(7)
    X = rng.normal(size=(rows, 32)) * np.where(rng.random(rows) < 0.2, 1.6, 1.0)[:, None]
    y = np.where(np.linalg.norm(X, axis=1) > np.sqrt(32) * 1.15, 1, -1)
    out.append(Stream(f"norm signal ({rows} x 32)", standardised(X), y))
    return out


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    """The Mann-Whitney AUC, ties halved."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    n_pos = int(np.sum(y == 1))
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * (len(y) - n_pos)))


def time_amf_run(X: np.ndarray, y: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
    model = create("amf", n_features=X.shape[1], rho=1.0, seed=seed)
    start = time.process_time()
    scores = model.run(X, y).scores
    return (time.process_time() - start) / len(y), scores


def time_amf_learn(X: np.ndarray, y: np.ndarray, seed: int) -> float:
    model = create("amf", n_features=X.shape[1], rho=1.0, seed=seed)
    rows = [np.ascontiguousarray(x) for x in X]
    start = time.process_time()
    for x, label in zip(rows, y.tolist(), strict=True):
        model.score(x)
        model.learn(x, label)
    return (time.process_time() - start) / len(y)


def time_river(X: np.ndarray, y: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
    from river import forest

    model = forest.AMFClassifier(n_estimators=TREES, seed=seed)
    rows = [{j: float(v) for j, v in enumerate(x)} for x in X]
    labels = [bool(v == 1) for v in y]
    proba = np.empty(len(y))
    start = time.process_time()
    for i, (x, label) in enumerate(zip(rows, labels, strict=True)):
        proba[i] = model.predict_proba_one(x).get(True, 0.5)
        model.learn_one(x, label)
    return (time.process_time() - start) / len(y), proba


def time_defaults(X: np.ndarray, y: np.ndarray) -> float:
    model = ModelConfig(n_features=X.shape[1]).build_learner()
    rows = [np.ascontiguousarray(x) for x in X]
    start = time.process_time()
    for x, label in zip(rows, y.tolist(), strict=True):
        model.score(x)
        model.learn(x, label)
    return (time.process_time() - start) / len(y)


def one_path(name: str, X: np.ndarray, y: np.ndarray, seed: int) -> tuple[float, np.ndarray | None]:
    """Seconds per label on path ``name``, and the scores when the path gives them."""
    if name == "amf run":
        return time_amf_run(X, y, seed)
    if name == "river":
        return time_river(X, y, seed)
    if name == "amf learn":
        return time_amf_learn(X, y, seed), None
    return time_defaults(X, y), None


def measure(stream: Stream, repeats: int) -> Results:
    res = Results()
    time_amf_run(stream.X[:20], stream.y[:20], 0)  # load the compiled code
    time_amf_learn(stream.X[:20], stream.y[:20], 0)
    time_defaults(stream.X[:20], stream.y[:20])
    for r in range(repeats):
        order = np.random.default_rng(100 + r).permutation(len(stream.y))
        X, y = stream.X[order], stream.y[order]
        names = ["amf run", "amf learn", "river", "defaults"]
        for name in names if r % 2 == 0 else names[::-1]:
            seconds, scores = one_path(name, X, y, seed=r)
            res.add(res.seconds, name, seconds)
            if scores is not None:
                who = "amf" if name == "amf run" else "river"
                cut = 0.0 if who == "amf" else 0.5
                res.add(res.accuracy, who, float(np.mean(np.where(scores >= cut, 1, -1) == y)))
                res.add(res.auc, who, auc(scores, y))
        print(f"{stream.name}: repeat {r + 1} done", file=sys.stderr, flush=True)
    return res


def spread(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    med = statistics.median(values) * scale
    return f"{med:.{digits}f} [{min(values) * scale:.{digits}f} to {max(values) * scale:.{digits}f}]"


def report(results: dict[str, Results], command: str, repeats: int) -> str:
    versions = package_versions(["river", "numba"])
    lines = [
        "## The forest learner against river's AMF (`python -m bench.forest`)",
        "",
        f"Command: `{command}`. Machine: {cpu_model(platform.processor())}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, river {versions.get('river', '?')}, numba "
        f"{versions.get('numba', '?')}. Baseline: river's `forest.AMFClassifier(n_estimators={TREES})`; "
        f"ours: `amf` with {TREES} trees. Predict-then-learn over standardised rows, {repeats} repeats "
        "(a row order and a seed each), fresh models, alternating order. Time per label: median "
        "[range] over repeats, CPU time of the process; speed-up: the per-repeat `river / amf`, "
        "median [range]; quality of the "
        "same predictions: accuracy at P(+|x) >= 1/2 and AUC, median [range]. `defaults`: the "
        "service's default model, a `score` and a `learn` call per label (the service's two calls); "
        "`defaults / river`: the per-repeat ratio of their times (at most 1: the defaults cost no more "
        "per label than river's AMF).",
        "",
        "| stream | amf run µs/label | amf learn µs/label | river µs/label | speed-up run | speed-up "
        "learn | defaults µs/label | defaults / river | accuracy amf | accuracy river | AUC amf "
        "| AUC river |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, res in results.items():
        s = res.seconds
        run_up = [b / a for a, b in zip(s["amf run"], s["river"], strict=True)]
        learn_up = [b / a for a, b in zip(s["amf learn"], s["river"], strict=True)]
        defaults_share = [a / b for a, b in zip(s["defaults"], s["river"], strict=True)]
        cells = [
            name,
            spread(s["amf run"], 1e6),
            spread(s["amf learn"], 1e6),
            spread(s["river"], 1e6),
            spread(run_up) + "x",
            spread(learn_up) + "x",
            spread(s["defaults"], 1e6),
            spread(defaults_share, 1, 2) + "x",
            spread(res.accuracy["amf"], 100),
            spread(res.accuracy["river"], 100),
            spread(res.auc["amf"], 1, 3),
            spread(res.auc["river"], 1, 3),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.forest", description=(__doc__ or "").split("\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rows", type=int, default=2000, help="rows of the 32-feature stream")
    p.add_argument("--output", default=None, help="write the section into this markdown file")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be >= 1")
    if args.rows < 100:
        p.error("--rows must be >= 100")
    shown = list(sys.argv[1:] if argv is None else argv)
    command = " ".join([".venv/bin/python -m bench.forest", *map(shlex.quote, shown)])
    results = {s.name: measure(s, args.repeats) for s in streams(args.rows)}
    text = report(results, command, args.repeats)
    print(text)
    if args.output:
        write_section(args.output, SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
