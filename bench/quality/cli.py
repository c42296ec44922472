"""The command line: run (or render from the cache) the benchmark, or the defaults study."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bench.quality
from bench.quality.compare import compare_lines
from bench.quality.protocol import DATASETS, SEED, SETS, SMALL_ROWS, load_stream, set_of, warm
from bench.quality.runs import DEFAULT_RESULTS_DIR, cache_path, run_dataset
from bench.quality.section import SECTION, print_tables, render
from bench.quality.study import run_study
from bench.quality.systems import systems
from bench.report import DEFAULT_PATH, write_section


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.quality", description=(bench.quality.__doc__ or "").split("\n")[0]
    )
    p.add_argument("datasets", nargs="*", help=f"names or LIBSVM paths (default: {', '.join(DATASETS)})")
    p.add_argument(
        "--set", choices=("all", *SETS), default="all",
        help="the tuning set (choices were made on it), the reporting set (no choice looks at it) or both",
    )  # fmt: skip
    p.add_argument("--permutations", type=int, default=5)
    p.add_argument(
        "--small-permutations", type=int, default=20, help=f"for data sets of <= {SMALL_ROWS} rows"
    )
    p.add_argument("--sklearn-permutations", type=int, default=2)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--positive-label", type=float, default=None, help="label of the +1 class in a file")
    p.add_argument("--no-peers", action="store_true", help="our learners only")
    p.add_argument("--no-sklearn", action="store_true")
    p.add_argument("--no-hindsight", dest="hindsight", action="store_false")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)
    p.add_argument("--render-only", action="store_true", help="rewrite the report from the cache")
    p.add_argument(
        "--output", type=Path, default=None,
        help="markdown file whose 'quality' section is written (default: docs/benchmarks.md when "
        "every default data set is run, else nothing)",
    )  # fmt: skip
    p.add_argument(
        "--only", default=None,
        help="comma-separated system keys (service:defaults,...): run these rows only, kept in the cache "
        "with its other rows (no report; --render-only writes it)",
    )  # fmt: skip
    p.add_argument("--study", action="store_true", help="the defaults study instead")
    return p


def record_seconds(record: dict[str, Any]) -> float:
    """The seconds of one cached row: its passes, every measure and order."""
    return float(sum(sum(per_metric["seconds"]) for per_metric in record.values()))


def merged(path: Path, result: dict[str, object]) -> dict[str, object]:
    """``result``'s rows over those cached in ``path`` for the same data set, else ``result``. The
    orders are prefixes of one seeded sequence, so rows run on fewer orders share the first ones;
    each row keeps its own per-order counts. The data set's seconds are the cached run's, less the
    passes of the rows ``result`` replaces, plus ``result``'s run."""
    if not path.exists():
        return result
    cached = json.loads(path.read_text())
    if cached.get("n") != result["n"] or cached.get("d") != result["d"]:
        return result
    new_records: dict[str, Any] = result["records"]  # type: ignore[assignment]
    replaced = sum(record_seconds(cached["records"][key]) for key in new_records if key in cached["records"])
    records = {**cached["records"], **new_records}
    seconds = float(cached.get("seconds", 0.0)) - replaced + float(result["seconds"])  # type: ignore[arg-type]
    permutations = max(int(cached["permutations"]), int(result["permutations"]))  # type: ignore[call-overload]
    return {**cached, **result, "records": records, "seconds": seconds, "permutations": permutations}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    argv_list = list(sys.argv[1:] if argv is None else argv)
    if args.study:
        return run_study(args)
    names = list(args.datasets) or list(DATASETS if args.set == "all" else SETS[args.set])
    output = args.output
    if output is None and not args.datasets and args.set == "all":
        output = DEFAULT_PATH
    args.results_dir.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    chosen = [
        s for s in systems()
        if not (args.no_peers and s.group == "peer") and not (args.no_sklearn and s.sklearn)
    ]  # fmt: skip
    if args.only is not None:
        keys = set(args.only.split(","))
        chosen = [s for s in chosen if s.key in keys]
        output = None
    else:
        chosen = [s for s in chosen if s.group != "candidate"]
    results = []
    started = time.perf_counter()
    for name in names:
        path = cache_path(args.results_dir, name)
        if args.render_only:
            results.append(json.loads(path.read_text()))
            continue
        stream = load_stream(name, args)
        warm(stream)
        log(f"{name}: {stream.n} x {stream.d}, {len(stream.orders)} orders")
        result = run_dataset(stream, chosen, args, log)
        result["set"] = set_of(name)
        if args.only is not None:  # the other rows of the cache stay (same orders only)
            result = merged(path, result)
        path.write_text(json.dumps(result))
        results.append(result)
    total = sum(r["seconds"] for r in results) if args.render_only else time.perf_counter() - started
    if args.only is not None:
        print("\n".join(compare_lines(results, args.only.split(","))))
    else:
        print_tables(results)
    if output is not None:
        shown = [a for a in argv_list if a != "--render-only"]
        command = " ".join([".venv/bin/python -m bench.quality", *map(shlex.quote, shown)])
        write_section(output, SECTION, render(results, command, total, args.results_dir))
        log(f"wrote the {SECTION!r} section of {output}")
    return 0
