"""``acog evaluate --protocol online``: the ACOG paper's protocol (:mod:`research.protocols.online`)
run from the parsed options, with its table or JSON document."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Any

from tqdm import tqdm

from service.cli_options import UsageError
from service.datasets.loading import load_dataset

from . import online as ev
from .oli2ds_cli import learner_options


def settings_from_args(args: argparse.Namespace) -> ev.OnlineProtocol:
    """The protocol settings the ``acog evaluate`` options describe."""
    return ev.OnlineProtocol(
        eta=args.eta,
        C=args.C,
        r=args.r,
        gamma=args.gamma,
        sketch_size=args.sketch_size,
        alpha_p=args.alpha_p,
        c_p=args.c_p,
        rho=args.rho,
        fit_intercept=args.intercept,
        normalize=not args.no_normalize,
        oli2ds=learner_options(args),
    )


def run_online(args: argparse.Namespace) -> int:
    """The ACOG paper's online protocol (:mod:`research.protocols.online`)."""
    data = load_dataset(args.dataset, args.datasets_dir)
    try:
        variants = ev.parse_variants(args.algorithms)
    except ValueError as exc:
        raise UsageError(f"--{exc}") from None
    metrics: list[ev.Metric] = ["sum", "cost"] if args.metric == "both" else [args.metric]
    settings = settings_from_args(args)
    orders = ev.permutations(data, args.permutations, args.seed)
    bar = tqdm(
        total=ev.total_runs(variants, metrics, settings, len(orders)),
        disable=not sys.stderr.isatty(),
        unit="run",
        desc=data.name,
        file=sys.stderr,
    )
    results, everything = [], []
    with bar:
        for variant, metric, best, tried in ev.evaluate(
            data, variants, metrics, settings, orders, bar.update
        ):
            results.append((variant, metric, best))
            everything.append(
                {
                    "algorithm": variant.label,
                    "metric": metric,
                    "best": best.summary(),
                    "tried": [t.summary() for t in tried],
                }
            )
    if args.json:
        json.dump(_document(args, data, orders, everything), sys.stdout, indent=2, default=str)
        print()
    else:
        source = "the data set's own" if args.seed is None and data.permutations is not None else "seeded"
        print(
            f"protocol online: {data.name}: {data.n_samples} x {data.n_features}, "
            f"{data.n_positive}:{data.n_negative} (+1:-1), {len(orders)} {source} permutations"
        )
        print(ev.format_table(results, metrics))
    return 0


def _document(args: argparse.Namespace, data: Any, orders: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "protocol": "online",
        "dataset": data.summary(),
        "permutations": len(orders),
        "command": " ".join(sys.argv),
        "python": platform.python_version(),
        "results": rows,
    }
