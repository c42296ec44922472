"""Per-call cost of the river adapter: score + learn one example at a time, against river's PA.

    .venv/bin/python -m bench.adapter_overhead [--rows 20000] [--repeats 5] [--output docs/benchmarks.md]

The stream is a9a's first ``--rows`` rows as river examples (``{name: value}`` over the non-zero
features, 14 a row). Each call is river's progressive validation step: ``predict_one(x)``,
then ``learn_one(x, y)``. Three models run alternately in every repeat, in the same process:
river's ``linear_model.PAClassifier()`` (the baseline), and
:class:`service.adapters.river_classifier.ACOGClassifier` with one member (ACOG, ``eta=1``,
``loss="II"``, full covariance over 124 coordinates) and with the service's defaults (ten
members). Reported: examples per second, median of the repeats with min to max, and the
ratio to PA within each repeat. Times are the process's CPU time (``time.process_time``): on a
shared machine the wall clock also counts the time other processes hold the cores.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

from river import linear_model

from bench.report import cpu_model, publish, spread
from service.adapters.river_classifier import ACOGClassifier
from service.datasets import load

MODELS: dict[str, Callable[[], Any]] = {
    "river PAClassifier()": linear_model.PAClassifier,
    "ACOGClassifier, one member (eta 1, loss II)": lambda: ACOGClassifier(
        max_features=123, eta=1.0, loss="II"
    ),
    "ACOGClassifier, service defaults (10 members)": lambda: ACOGClassifier(max_features=123),
}
BASELINE = "river PAClassifier()"


def stream(rows: int) -> list[tuple[dict[str, float], bool]]:
    data = load("a9a")
    X = data.X.tocsr()
    out = []
    for i in range(min(rows, X.shape[0])):
        start, end = X.indptr[i], X.indptr[i + 1]
        x = {f"f{j}": float(v) for j, v in zip(X.indices[start:end], X.data[start:end], strict=True)}
        out.append((x, bool(data.y[i] == 1)))
    return out


def rate(model: Any, examples: list[tuple[dict[str, float], bool]]) -> float:
    predict, learn = model.predict_one, model.learn_one
    start = time.process_time()
    for x, y in examples:
        predict(x)
        learn(x, y)
    return len(examples) / (time.process_time() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default=None, help="write the section into this markdown file")
    args = parser.parse_args(argv)
    examples = stream(args.rows)
    warm = examples[:200]
    for make in MODELS.values():  # compile / load the kernels before timing
        rate(make(), warm)
    rates: dict[str, list[float]] = {name: [] for name in MODELS}
    for _ in range(args.repeats):
        for name, make in MODELS.items():
            rates[name].append(rate(make(), examples))
    lines = [
        "## River adapter per call (`python -m bench.adapter_overhead`)",
        "",
        f"Command: `python -m bench.adapter_overhead --rows {args.rows} --repeats {args.repeats}`. "
        f"Machine: {cpu_model()}. Python {platform.python_version()}. "
        f"a9a's first {len(examples):,} rows as river examples; "
        "each call is `predict_one(x)` then `learn_one(x, y)`, fresh models, the three alternating "
        "in every repeat; CPU time of the process; median of the repeats (min to max).",
        "",
        "| model | examples/s | vs river PA |",
        "|---|---:|---:|",
    ]
    for name, values in rates.items():
        ratios = [v / b for v, b in zip(values, rates[BASELINE], strict=True)]
        lines.append(f"| {name} | {spread(values)} | {spread(ratios, 2)} |")
    return publish("\n".join(lines), args.output, "adapter-overhead")


if __name__ == "__main__":
    sys.exit(main())
