"""``acog evaluate``: command-line options and output for :mod:`service.evaluation.online`."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Any

from tqdm import tqdm

from ..cli_options import (
    UsageError,
    load_dataset,
    non_negative_int,
    open_fraction,
    positive_float,
    positive_int,
)
from . import online as ev
from .oli2ds_cli import learner_options


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not values or any(not v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"every value must be > 0, got {text!r}")
    return values


PAPER_GRID = tuple(10.0**k for k in range(-5, 6))


def _grid(text: str) -> tuple[float, ...]:
    return PAPER_GRID if text == "grid" else _floats(text)


def _rho(text: str) -> float | str:
    if text in ("true", "laplace"):
        return text
    return _floats(text)[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from .protocols import PROTOCOLS

    parser.add_argument(
        "--protocol",
        choices=list(PROTOCOLS),
        default="online",
        help="; ".join(f"{name}: {p.description}" for name, p in PROTOCOLS.items()).replace("%", "%%"),
    )
    parser.add_argument(
        "dataset",
        help="a shared data set name (german, a9a, ijcnn1, mushrooms, "
        "australian, dna, usps, sklearn:breast_cancer, river:phishing) or a file: "
        "LIBSVM text (plain/.gz/.bz2/.xz), a german.mat-style .mat, ESL zip.*",
    )
    parser.add_argument(
        "--algorithms",
        default="paper",
        help='"paper" (Table II rows), "all" (adds SACOG/SSACOG) or a comma list '
        "such as acog-II,acog-diag-I,ssacog,perceptron (no suffix = both losses); with --protocol "
        'sdrogd: "paper" (sdrogd,pegasos) or either',
    )
    parser.add_argument("--metric", choices=["sum", "cost", "both"], default="both", help="what to report")
    parser.add_argument(
        "--eta",
        type=_grid,
        default=(100.0,),
        help='learning rate(s), comma list or "grid" (1e-5..1e5); several are swept (default: 100)',
    )
    parser.add_argument(
        "--C", type=_grid, default=(10.0,), help="PA-I aggressiveness, swept like --eta (default: 10)"
    )
    parser.add_argument(
        "--r", type=_grid, default=(0.1,), help="AROW regulariser, swept like --eta (default: 0.1)"
    )
    parser.add_argument("--gamma", type=positive_float, default=1.0, help="ACOG regulariser")
    parser.add_argument("--sketch-size", type=positive_int, default=5, help="SACOG/SSACOG sketch size")
    parser.add_argument(
        "--alpha-p", type=open_fraction, default=0.5, help="weight of sensitivity in sum, in (0, 1)"
    )
    parser.add_argument("--c-p", type=open_fraction, default=0.9, help="cost of a missed positive, in (0, 1)")
    parser.add_argument(
        "--rho",
        type=_rho,
        default="true",
        help='sum runs: "true" (T_n/T_p of the data), "laplace" (online estimate) '
        "or a number; cost runs use c_p/c_n unless a number is given",
    )
    parser.add_argument("--permutations", type=positive_int, default=20, help="orders of the stream run")
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=None,
        help="seed the permutations (default: the data set's own, e.g. german.mat's ID_ALL)",
    )
    parser.add_argument(
        "--intercept", action="store_true", help="append a constant feature (off in the paper)"
    )
    parser.add_argument("--no-normalize", action="store_true", help="skip the unit-L2 scaling of examples")
    parser.add_argument(
        "--datasets-dir",
        default=None,
        help="where the data set files live (default: $ACOG_DATASETS_DIR, else the cache "
        "`acog datasets fetch` fills)",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    for protocol in PROTOCOLS.values():
        protocol.add_arguments(parser)


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


def run_evaluate(args: argparse.Namespace) -> int:
    """Run the protocol ``--protocol`` names (:data:`service.evaluation.protocols.PROTOCOLS`)."""
    from .protocols import PROTOCOLS

    return PROTOCOLS[args.protocol].run(args)


def run_online(args: argparse.Namespace) -> int:
    """The ACOG paper's online protocol (:mod:`service.evaluation.online`)."""
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
