"""OLI2DS against its targets: the ``oli2ds`` section of ``docs/reproduction.md``.

    .venv/bin/python -m bench.oli2ds_reproduction [--output docs/reproduction.md] [--no-write]

Every figure comes from ``acog evaluate`` argument lists parsed by the real command line
(:func:`service.cli.build_parser`): the OLI2DS code's protocol (``--protocol oli2ds``) on the
code's three data sets, with the learner's reference rule and its two options that the
specification measured (``--statistics welford``, ``--cost-in cap``), and the service's own online
protocol (``sum`` and ``cost``) for OLI2DS next to ACOG-II on the same data sets.

The journal's tables are not available, so the targets are the figures the specification
measured with a re-implementation that reproduced the authors' code digit for digit
(``docs/learners.md`` §9). Each of our figures is printed next to its target, and
every difference is labelled.
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.report import cpu_model, package_versions, write_section
from research.protocols import oli2ds as protocol
from research.protocols import online as ev
from research.protocols.oli2ds_cli import learner_options
from research.protocols.online_cli import settings_from_args
from service.cli import build_parser as build_acog_parser
from service.datasets import load

SECTION = "oli2ds"
OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "reproduction.md"
DATASETS = ("wdbc", "credit-a", "splice")
TOLERANCE = 1e-4

TARGETS: dict[tuple[str, str], tuple[float, float, float, float]] = {
    # (data set, scheme): F1 mean, F1 std, G-mean mean, G-mean std; docs/learners.md §9
    ("wdbc", "trapezoidal"): (0.9144, 0.0077, 0.9356, 0.0063),
    ("wdbc", "capricious"): (0.9277, 0.0093, 0.9458, 0.0074),
}
ROUND_ONE = ("wdbc", "trapezoidal", (201, 11, 333, 24), 0.919908, 0.940412)
"""The spec's trapezoidal round 1 on WDBC: tp/fn/tn/fp, F1, G-mean."""
OPTION_BOUNDS = {"--statistics welford": 0.0012, "--cost-in cap": 0.0014}
"""The largest WDBC F1 change the specification measured for each option."""
README_FIGURE = "G-mean near 0.95 and F1 near 0.93 (WDBC, capricious, Python's unseeded `random`)"


def acog(argv: list[str]) -> argparse.Namespace:
    """``acog evaluate ARGV`` parsed by the real CLI parser."""
    return build_acog_parser().parse_args(["evaluate", *argv])


def run_code_protocol(argv: list[str]) -> list[protocol.ProtocolResult]:
    """``acog evaluate ... --protocol oli2ds``, as the command runs it."""
    args = acog(argv)
    data = load(args.dataset)
    params = {**learner_options(args), "zero_is_missing": not args.keep_zeros}
    schemes = protocol.SCHEMES if args.scheme == "both" else (args.scheme,)
    seed = protocol.SEED if args.seed is None else args.seed
    X = data.X.toarray()
    return [
        protocol.evaluate(data.name, X, data.y, s, protocol.learner_runner(**params), args.rounds, seed)
        for s in schemes
    ]


def run_online(argv: list[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """``acog evaluate ...`` under the online protocol: ``(algorithm, metric, best summary)`` rows."""
    args = acog(argv)
    data = load(args.dataset)
    metrics: list[ev.Metric] = ["sum", "cost"] if args.metric == "both" else [args.metric]
    orders = ev.permutations(data, args.permutations, args.seed)
    return [
        (variant.label, metric, best.summary())
        for variant, metric, best, _ in ev.evaluate(
            data, ev.parse_variants(args.algorithms), metrics, settings_from_args(args), orders
        )
    ]


def fmt(mean: float, std: float) -> str:
    return f"{mean:.4f} ± {std:.4f}"


def verdict(ours: tuple[float, float], target: tuple[float, float]) -> str:
    diffs = [abs(a - b) for a, b in zip(ours, target, strict=True)]
    if max(diffs) <= TOLERANCE:
        return "**equal** (to 1e-4)"
    return f"**miss** (mean {ours[0] - target[0]:+.4f}, std {ours[1] - target[1]:+.4f})"


def code_protocol_section(results: dict[str, list[protocol.ProtocolResult]]) -> list[str]:
    lines = [
        "| data set | scheme | F1 (ours) | F1 (target) | G-mean (ours) | G-mean (target) | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in DATASETS:
        for r in results[name]:
            target = TARGETS.get((name, r.scheme))
            if target is None:
                lines.append(f"| {name} | {r.scheme} | {fmt(*r.f1)} | — | {fmt(*r.g_mean)} | — | no target |")
                continue
            v_f1, v_g = verdict(r.f1, target[:2]), verdict(r.g_mean, target[2:])
            shown = v_f1 if v_f1 == v_g else f"F1 {v_f1}; G-mean {v_g}"
            lines.append(
                f"| {name} | {r.scheme} | {fmt(*r.f1)} | {fmt(*target[:2])} | {fmt(*r.g_mean)} "
                f"| {fmt(*target[2:])} | {shown} |"
            )
    return lines


def round_one_line(results: dict[str, list[protocol.ProtocolResult]]) -> str:
    name, scheme, counts, f1, g = ROUND_ONE
    first = next(r for r in results[name] if r.scheme == scheme).rounds[0]
    ours = (first.tp, first.fn, first.tn, first.fp)
    same = ours == counts and abs(first.f1 - f1) < 1e-6 and abs(first.g_mean - g) < 1e-6
    return (
        f"WDBC trapezoidal, round 1 alone: tp/fn/tn/fp {'/'.join(map(str, ours))}, F1 {first.f1:.6f}, "
        f"G-mean {first.g_mean:.6f}; target {'/'.join(map(str, counts))}, {f1:.6f}, {g:.6f}: "
        + ("**equal**." if same else "**miss**.")
    )


def options_section(
    base: list[protocol.ProtocolResult], options: dict[str, list[protocol.ProtocolResult]]
) -> list[str]:
    lines = [
        "| option | scheme | F1 | G-mean | F1 change | the spec measured |",
        "|---|---|---|---|---|---|",
    ]
    for option, results in options.items():
        for ref_result, r in zip(base, results, strict=True):
            change = r.f1[0] - ref_result.f1[0]
            bound = OPTION_BOUNDS[option]
            label = "within" if abs(change) <= bound + 5e-5 else "**beyond**"
            lines.append(
                f"| `{option}` | {r.scheme} | {fmt(*r.f1)} | {fmt(*r.g_mean)} | {change:+.4f} "
                f"| ≤ {bound} ({label}) |"
            )
    return lines


def online_section(rows: dict[str, list[tuple[str, str, dict[str, Any]]]]) -> list[str]:
    lines = [
        "| data set | algorithm | sum % | sens % | spec % | param | cost | sens % | spec % | param |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def pm(stat: dict[str, float]) -> str:
        return f"{stat['mean']:.3f} ± {stat['std']:.3f}"

    def param(summary: dict[str, Any]) -> str:
        p = summary["params"]
        return next((f"{k}={p[k]:g}" for k in ("eta", "C") if k in p), "")

    for name, results in rows.items():
        by_algorithm: dict[str, dict[str, dict[str, Any]]] = {}
        for algorithm, metric, summary in results:
            by_algorithm.setdefault(algorithm, {})[metric] = summary
        for algorithm, per in by_algorithm.items():
            s, c = per["sum"], per["cost"]
            lines.append(
                f"| {name} | {algorithm} | {pm(s['sum_percent'])} | {pm(s['sensitivity_percent'])} "
                f"| {pm(s['specificity_percent'])} | {param(s)} | {pm(c['cost_hundreds'])} "
                f"| {pm(c['sensitivity_percent'])} | {pm(c['specificity_percent'])} | {param(c)} |"
            )
    return lines


def render(
    code: dict[str, list[protocol.ProtocolResult]],
    options: dict[str, list[protocol.ProtocolResult]],
    online: dict[str, list[tuple[str, str, dict[str, Any]]]],
    online_commands: list[str],
    seconds: float,
) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in package_versions(["numpy", "numba", "scikit-learn"]).items())
    code_commands = [f"acog evaluate {name} --protocol oli2ds" for name in DATASETS]
    return "\n".join(
        [
            "## OLI2DS (You et al., IEEE TKDE 35(10), 2023)",
            "",
            "Written by `python -m bench.oli2ds_reproduction`; do not edit by hand. "
            f"Machine: {cpu_model()}, Python {platform.python_version()}, {versions}; {seconds:.0f} s.",
            "",
            "**The journal's tables were not available.** Its F-measure and G-mean tables (14 real and 13 "
            "MOA data sets) could not be found in any reachable store, and the blog notes we have print no "
            "numbers. So nothing here is compared with the paper. The targets are instead the figures of the "
            "authors' own code (`youdianlong/OLI2DS`) under its own protocol, as measured by a clean "
            "re-implementation that reproduced that code's outputs to every digit "
            "(`docs/learners.md` §9): WDBC only, trapezoidal and capricious. The code's "
            f"README shows a figure too, {README_FIGURE}; our capricious scheme is the seeded variant, so "
            "that figure is not comparable digit for digit, and it is not a target.",
            "",
            "**Protocol** (`acog evaluate DATASET --protocol oli2ds`): standardise every feature over the "
            "whole set (sklearn `scale`), seed numpy's legacy generator with 20 once and shuffle the rows "
            "before each of 10 rounds, drop features by the trapezoidal scheme or the seeded capricious "
            "one (`RandomState(1000 + r)`), read 0 as missing (`zero_is_missing`), stream once with the "
            "code's defaults (C = 0.01, theta = 8, the reference statistics, the cost scaling the step); "
            "the prediction is the score `learn` computes after updating the statistics, and a score of 0 "
            "counts as a mistake; report the final cumulative F1 (+1 positive) and G-mean, mean ± std "
            "(ddof = 0) over the rounds. A verdict is **equal** when mean and std are both within 1e-4 of "
            "the target.",
            "",
            "Commands: " + ", ".join(f"`{c}`" for c in code_commands) + ".",
            "",
            *code_protocol_section(code),
            "",
            round_one_line(code),
            "",
            "credit-a and splice have no target: the code's repository ships them, but no figure for them "
            "was measured or published that we could reach. Their rows are ours alone.",
            "",
            "### The options the specification measured (WDBC)",
            "",
            "Against the rows above; the right column is the largest change of the WDBC F1 the "
            "specification measured for the option.",
            "",
            *options_section(code["wdbc"], options),
            "",
            "### The service's own protocol",
            "",
            "So that OLI2DS sits in the same tables as ACOG: the online protocol of the rest of this "
            "report (20 seeded permutations, every example at unit L2 norm, no intercept; sum with rho "
            "from the true class counts, cost with c_p = 0.9), OLI2DS with the code's defaults against "
            "ACOG-II with eta picked from 1e-5 .. 1e5. These streams are complete (only true zeros are "
            "absent) and not standardised: OLI2DS, without an intercept as in the code, keeps its "
            "threshold at 0, which suits centred (standardised) features and not raw non-negative ones; "
            "its cost runs weigh the step, which cannot move that threshold (the benchmark's rows with "
            "and without an intercept, docs/benchmarks.md, show the difference).",
            "",
            "Commands: " + ", ".join(f"`{c}`" for c in online_commands) + ".",
            "",
            *online_section(online),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.oli2ds_reproduction", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--no-write", action="store_true", help="print, write nothing")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    code = {name: run_code_protocol([name, "--protocol", "oli2ds"]) for name in DATASETS}
    options = {
        option: run_code_protocol(["wdbc", "--protocol", "oli2ds", *shlex.split(option)])
        for option in OPTION_BOUNDS
    }
    online_argv = {
        name: [name, "--algorithms", "oli2ds,acog-II", "--eta", "grid", "--permutations", "20", "--seed", "0"]
        for name in (*DATASETS, "german", "australian")
    }
    online = {name: run_online(argv_) for name, argv_ in online_argv.items()}
    commands = [shlex.join(["acog", "evaluate", *a]) for a in online_argv.values()]
    text = render(code, options, online, commands, time.perf_counter() - start)
    print(text)
    if not args.no_write:
        write_section(args.output, SECTION, text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
