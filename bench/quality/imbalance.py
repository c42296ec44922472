"""The combiner study on imbalanced variants of the tuning set.

    .venv/bin/python -m bench.quality.imbalance [--shares 0.06,0.03] [--output docs/benchmarks.md]

Most data sets of the tuning set hold 10 % to 50 % positives, and the vote was chosen on them; the
streams a service watches often hold far fewer. Here each tuning data set's positives are subsampled
(seeded, every negative kept: :func:`bench.quality.protocol.with_positive_share`) to each share, and
:mod:`bench.quality.combiners` replays every combiner on the default ensemble's members over those
streams. Still the tuning set only: nothing here reads the reporting set.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.quality import combiners
from bench.report import publish

SECTION = "combiners-imbalanced"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.imbalance")
    p.add_argument("--shares", default="0.06,0.03", help="shares of positives, comma-separated")
    p.add_argument("--permutations", type=int, default=3)
    p.add_argument("--small-permutations", type=int, default=10)
    p.add_argument("--output", default=None, help="write the section into this markdown file")
    args = p.parse_args(argv)
    shares = [float(s) for s in args.shares.split(",")]
    parts = [
        "## The combiners on imbalanced variants of the tuning set (`python -m bench.quality.imbalance`)",
        "",
        f"Command: `python -m bench.quality.imbalance --shares {args.shares} --permutations "
        f"{args.permutations} --small-permutations {args.small_permutations}`. Every tuning data set with "
        "its positives subsampled (seeded, every negative kept) to each share; the columns are those of "
        "the study on the tuning set as it is (the quality section, *How the members combine*).",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for share in shares:
            table = Path(tmp) / f"{share:g}.md"
            combiners.main(
                [
                    "--permutations", str(args.permutations),
                    "--small-permutations", str(args.small_permutations),
                    "--positives", f"{share:g}", "--table", str(table),
                ]
            )  # fmt: skip
            parts += ["", f"### {100 * share:g} % positives", "", table.read_text().strip()]
    return publish("\n".join(parts), args.output, SECTION)


if __name__ == "__main__":
    sys.exit(main())
