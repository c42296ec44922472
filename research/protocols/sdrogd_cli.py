"""``acog evaluate --protocol sdrogd``: options and output of :mod:`research.protocols.sdrogd`."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Any

from tqdm import tqdm

from service.cli_options import UsageError, int_at_least, positive_int
from service.datasets.loading import load_dataset

from . import sdrogd as protocol

NOT_STANDARDISED = ("a9a",)
"""The paper standardises every data set but a9a (and its toy set)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("--protocol sdrogd", "options of the SDROGD paper's protocol")
    group.add_argument("--repeats", type=positive_int, default=5, help="80/20 splits (5 in the paper)")
    group.add_argument("--folds", type=int_at_least(2), default=3, help="cross-validation folds on the 80 %%")
    group.add_argument(
        "--grid", choices=sorted(protocol.GRIDS), default="paper", help="the paper's grids, or a small one"
    )
    group.add_argument(
        "--standardize",
        choices=["auto", "yes", "no"],
        default="auto",
        help="zero mean, unit variance over the whole set; auto: as the paper (all but a9a)",
    )
    group.add_argument(
        "--no-intercept", action="store_true", help="no constant feature (the protocol appends one)"
    )
    group.add_argument("--batch-size", type=positive_int, default=60, help="labels per step")
    group.add_argument("--eq17", choices=["expanded", "printed"], default="expanded")
    group.add_argument("--sketch-rows", choices=["all", "upper"], default="all")


def settings_from_args(args: argparse.Namespace) -> protocol.SDROGDProtocol:
    """The protocol settings the options describe (``--algorithms paper`` = SDROGD and Pegasos)."""
    standardize = args.standardize == "yes" or (
        args.standardize == "auto" and args.dataset not in NOT_STANDARDISED
    )
    try:
        algorithms = protocol.parse_algorithms(args.algorithms)
    except ValueError as exc:
        raise UsageError(f"--algorithms: {exc}") from None
    return protocol.SDROGDProtocol(
        algorithms=algorithms,
        repeats=args.repeats,
        seed=0 if args.seed is None else args.seed,
        folds=args.folds,
        batch_size=args.batch_size,
        fit_intercept=not args.no_intercept,
        standardize=standardize,
        grid=protocol.GRIDS[args.grid],
        eq17=args.eq17,
        sketch_rows=args.sketch_rows,
    )


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    data = load_dataset(args.dataset, args.datasets_dir)
    bar = tqdm(
        total=len(settings.algorithms) * settings.repeats,
        disable=not sys.stderr.isatty(),
        unit="repeat",
        desc=data.name,
        file=sys.stderr,
    )
    with bar:
        results = protocol.evaluate(data, settings, bar.update)
    if args.json:
        json.dump(document(args, data, settings, results), sys.stdout, indent=2, default=str)
        print()
        return 0
    print(
        f"protocol sdrogd: {data.name}, {data.n_samples} x {data.n_features}, "
        f"{data.n_positive}:{data.n_negative} (+1:-1); {settings.repeats} random "
        f"{100 * (1 - settings.test_fraction):.0f}/{100 * settings.test_fraction:.0f} splits (seed "
        f"{settings.seed}), {settings.folds}-fold CV on the {args.grid} grid, batch {settings.batch_size}, "
        f"{'standardised' if settings.standardize else 'raw features'}, "
        f"{'with' if settings.fit_intercept else 'no'} intercept"
    )
    print(protocol.format_table(results))
    return 0


def document(
    args: argparse.Namespace, data: Any, settings: protocol.SDROGDProtocol, results: list[protocol.Result]
) -> dict[str, Any]:
    return {
        "protocol": "sdrogd",
        "dataset": data.summary(),
        "settings": {
            "repeats": settings.repeats,
            "seed": settings.seed,
            "folds": settings.folds,
            "grid": args.grid,
            "batch_size": settings.batch_size,
            "standardize": settings.standardize,
            "fit_intercept": settings.fit_intercept,
            "eq17": settings.eq17,
            "sketch_rows": settings.sketch_rows,
        },
        "command": " ".join(sys.argv),
        "python": platform.python_version(),
        "results": [r.summary() for r in results],
    }
