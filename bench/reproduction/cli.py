"""The reproduction report: every shared data set against the paper's published figures.

    .venv/bin/python -m bench.reproduction [--datasets german,a9a] [--permutations 20]
        [--results-dir /tmp/acog-repro] [--output docs/reproduction.md] [--render-only]

Results are cached under ``--results-dir`` (``NAME.json``: protocol, ``NAME.extras.json``: extras,
``NAME.rounding.json``: the one-ulp check of :mod:`bench.reproduction.rounding`);
``--render-only`` regenerates the markdown from the cache without running anything. ``--paper sdrogd``
runs and writes the SDROGD paper's section instead (:mod:`bench.reproduction.sdrogd`).
Besides the protocol
runs, each data set has *extras*: the runs the "Misses explained" sections quote (other
permutation seeds, other label mappings, australian's raw features, the 141,691-row ijcnn1,
random sketch directions, a rho sweep for CPA-PB, ...).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.report import carry_sections
from bench.reproduction.extras import run_extras
from bench.reproduction.paper import PAPER_RESULTS
from bench.reproduction.plans import ORDER, PLANS
from bench.reproduction.report import render
from bench.reproduction.rounding import rounding_check
from bench.reproduction.runs import cached, compute

DEFAULT_RESULTS_DIR = Path("/tmp/acog-repro")
DEFAULT_OUTPUT = Path(__file__).resolve().parents[2] / "docs" / "reproduction.md"


def build_parser() -> argparse.ArgumentParser:
    """Options of ``python -m bench.reproduction``."""
    parser = argparse.ArgumentParser(prog="python -m bench.reproduction", description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="all", help=f"comma list of {', '.join(ORDER)} or 'all'")
    parser.add_argument("--permutations", type=int, default=20)
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=DEFAULT_RESULTS_DIR,
        help="per-data-set JSON cache (NAME.json, NAME.extras.json)",
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the markdown report")
    parser.add_argument("--render-only", action="store_true", help="only rewrite the report from the cache")
    parser.add_argument("--force", action="store_true", help="recompute even when a cached result exists")
    parser.add_argument("--force-extras", action="store_true", help="recompute the extras only")
    parser.add_argument("--no-extras", action="store_true", help="skip the runs the explanations quote")
    parser.add_argument(
        "--paper", choices=["acog", "sdrogd"], default="acog", help="whose figures to reproduce"
    )
    parser.add_argument("--repeats", type=int, default=5, help="--paper sdrogd: 80/20 splits per data set")
    return parser


def selected(spec: str) -> list[str]:
    names = list(ORDER) if spec == "all" else [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in PLANS]
    if unknown:
        raise SystemExit(f"unknown data set(s) {unknown}; known: {', '.join(ORDER)}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.paper == "sdrogd":
        return sdrogd_report(args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    for name in [] if args.render_only else selected(args.datasets):
        plan, main_path = PLANS[name], args.results_dir / f"{name}.json"
        result = None if args.force else cached(main_path, args.permutations)
        if result is None:
            result = compute(plan, args.permutations)
            result["command"] = shlex.join(
                [
                    "python",
                    "-m",
                    "bench.reproduction",
                    "--datasets",
                    name,
                    "--permutations",
                    str(args.permutations),
                ]
            )
            main_path.write_text(json.dumps(result, indent=1))
        rounding_path = args.results_dir / f"{name}.rounding.json"
        if not args.no_extras and (args.force or not cached(rounding_path, args.permutations)):
            rounding_path.write_text(json.dumps(rounding_check(PLANS[name], result), indent=1))
        extras_path = args.results_dir / f"{name}.extras.json"
        fresh = args.force or args.force_extras
        if args.no_extras or (not fresh and cached(extras_path, args.permutations)):
            continue
        print(f"[{name}] extras", file=sys.stderr, flush=True)
        start = time.perf_counter()
        extras = run_extras(plan, result, args.permutations)
        extras.update(permutations=args.permutations, compute_seconds=time.perf_counter() - start)
        extras_path.write_text(json.dumps(extras, indent=1))
    results = {}
    for name in ORDER:
        result = cached(args.results_dir / f"{name}.json", args.permutations)
        if result is not None:
            result["extras"] = cached(args.results_dir / f"{name}.extras.json", args.permutations) or {}
            result["rounding"] = cached(args.results_dir / f"{name}.rounding.json", args.permutations) or {}
            results[name] = result
    args.output.parent.mkdir(parents=True, exist_ok=True)
    text = render(results, PAPER_RESULTS.read_text())
    old = args.output.read_text() if args.output.exists() else ""
    args.output.write_text(carry_sections(old, text))  # sections other scripts write (e.g. opid) stay
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def sdrogd_report(args: argparse.Namespace) -> int:
    from bench.reproduction import sdrogd

    names = list(sdrogd.ORDER) if args.datasets == "all" else [s.strip() for s in args.datasets.split(",")]
    unknown = [n for n in names if n not in sdrogd.ORDER]
    if unknown:
        known = ", ".join(sdrogd.ORDER)
        raise SystemExit(f"unknown data set(s) {unknown} for --paper sdrogd; known: {known}")
    return sdrogd.main(names, args.repeats, args.results_dir, args.output, args.render_only, args.force)
