"""``acog evaluate``: the command-line options every protocol shares (and the online protocol's),
and the run of the protocol ``--protocol`` names (:data:`research.protocols.PROTOCOLS`).

The product does not import this package: ``pyproject.toml`` registers :data:`command` as the
``evaluate`` entry point of the ``acog.commands`` group, which ``acog`` (:mod:`service.cli`) reads."""

from __future__ import annotations

import argparse

from service.cli_options import Command, non_negative_int, open_fraction, positive_float, positive_int

from .protocols import PROTOCOLS


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


def run_evaluate(args: argparse.Namespace) -> int:
    """Run the protocol ``--protocol`` names (:data:`research.protocols.PROTOCOLS`)."""
    return PROTOCOLS[args.protocol].run(args)


command = Command(
    help="replay a data set through the learners (the paper's protocol)",
    description="Replay a data set as a stream (predict, then learn every label at once) over "
    "several permutations and print the paper's columns, mean ± sample std.",
    add_arguments=add_arguments,
    run=run_evaluate,
)
"""``acog evaluate`` (the ``evaluate`` entry point of ``acog.commands``)."""
