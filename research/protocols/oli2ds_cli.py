"""``acog evaluate --protocol oli2ds``: options and output of :mod:`research.protocols.oli2ds`.

The options of the OLI2DS learner (``--oli2ds-C``, ``--theta``, ``--statistics``, ...) are also what
``--algorithms oli2ds`` runs with under the online protocol.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Any

from service.cli_options import UsageError, fraction, positive_float, positive_int
from service.datasets.loading import load_dataset

from . import oli2ds as protocol


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "--protocol oli2ds", "the OLI2DS code's protocol and the learner's options"
    )
    group.add_argument(
        "--scheme", choices=[*protocol.SCHEMES, "both"], default="both", help="how features go missing"
    )
    group.add_argument("--rounds", type=positive_int, default=protocol.ROUNDS, help="shuffled rounds")
    group.add_argument("--oli2ds-C", type=positive_float, default=0.01, help="OLI2DS: C (the code's)")
    group.add_argument("--theta", type=positive_float, default=8.0, help="OLI2DS: theta")
    group.add_argument("--statistics", choices=["reference", "welford"], default="reference")
    group.add_argument("--cost-in", choices=["scale", "cap"], default="scale")
    group.add_argument(
        "--keep-zeros",
        action="store_true",
        help="read an explicit 0 as present (the code reads it as missing)",
    )
    group.add_argument(
        "--sparsity", action="store_true", help="OLI2DS: the L1-ball projection and truncation"
    )
    group.add_argument(
        "--lambda-s", type=positive_float, default=30.0, help="OLI2DS: radius of the sparsity projection"
    )
    group.add_argument(
        "--keep-share", type=fraction, default=1.0, help="OLI2DS: B, the share of features kept"
    )


def learner_options(args: argparse.Namespace) -> dict[str, Any]:
    """The OLI2DS hyper-parameters the options describe (``zero_is_missing`` apart)."""
    return {
        "C": args.oli2ds_C,
        "theta": args.theta,
        "statistics": args.statistics,
        "cost_in": args.cost_in,
        "sparsity": args.sparsity,
        "lambda_s": args.lambda_s,
        "B": args.keep_share,
    }


def run(args: argparse.Namespace) -> int:
    if args.algorithms not in ("paper", "oli2ds"):
        raise UsageError('--algorithms: the oli2ds protocol runs OLI2DS only ("paper" or "oli2ds")')
    data = load_dataset(args.dataset, args.datasets_dir)
    seed = protocol.SEED if args.seed is None else args.seed
    schemes = protocol.SCHEMES if args.scheme == "both" else (args.scheme,)
    params = {**learner_options(args), "zero_is_missing": not args.keep_zeros}
    X = data.X.toarray()
    results = [
        protocol.evaluate(data.name, X, data.y, scheme, protocol.learner_runner(**params), args.rounds, seed)
        for scheme in schemes
    ]
    if args.json:
        json.dump(document(args, data, seed, params, results), sys.stdout, indent=2, default=str)
        print()
        return 0
    print(
        f"protocol oli2ds: {data.name}: {data.n_samples} x {data.n_features}, "
        f"{data.n_positive}:{data.n_negative} (+1:-1), {args.rounds} rounds shuffled from seed {seed}"
    )
    print(table(results))
    return 0


def table(results: list[protocol.ProtocolResult]) -> str:
    """One row per scheme: F1 and G-mean, mean ± std (ddof = 0), and the first round's counts."""
    lines = ["| scheme | F1 | G-mean | round 1 tp/fn/tn/fp |", "|---|---|---|---|"]
    for r in results:
        first = r.rounds[0]
        lines.append(
            f"| {r.scheme} | {r.f1[0]:.4f} ± {r.f1[1]:.4f} | {r.g_mean[0]:.4f} ± {r.g_mean[1]:.4f} "
            f"| {first.tp}/{first.fn}/{first.tn}/{first.fp} |"
        )
    return "\n".join(lines)


def document(
    args: argparse.Namespace,
    data: Any,
    seed: int,
    params: dict[str, Any],
    results: list[protocol.ProtocolResult],
) -> dict[str, Any]:
    return {
        "protocol": "oli2ds",
        "dataset": data.summary(),
        "rounds": args.rounds,
        "seed": seed,
        "params": params,
        "command": " ".join(sys.argv),
        "python": platform.python_version(),
        "results": [
            {
                "scheme": r.scheme,
                "f1": {"mean": r.f1[0], "std": r.f1[1]},
                "g_mean": {"mean": r.g_mean[0], "std": r.g_mean[1]},
                "rounds": [
                    {"tp": x.tp, "fn": x.fn, "tn": x.tn, "fp": x.fp, "f1": x.f1, "g_mean": x.g_mean}
                    for x in r.rounds
                ],
            }
            for r in results
        ],
    }
