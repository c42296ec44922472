"""``acog evaluate DATASET --protocol opid``: the OPID paper's Table 2 protocol (:mod:`.opid`) from the
command line. ``--permutations`` is the number of repeats (20 by default), ``--seed`` seeds the draws
(0 by default), ``--json`` prints every accuracy instead of the table."""

from __future__ import annotations

import argparse
import json
import sys

from tqdm import tqdm

from service.cli_options import UsageError

from . import opid


def settings_from_args(args: argparse.Namespace) -> opid.OPIDProtocol:
    """The protocol settings the command line describes."""
    return opid.OPIDProtocol(repeats=args.permutations, seed=0 if args.seed is None else args.seed)


def run_opid(args: argparse.Namespace) -> int:
    setup = opid.SETUPS.get(args.dataset)
    if setup is None:
        raise UsageError(
            f"the opid protocol knows {', '.join(opid.SETUPS)} (Table 1 settings), not {args.dataset!r}"
        )
    settings = settings_from_args(args)
    bar = tqdm(
        total=settings.repeats * len(setup.sizes),
        disable=not sys.stderr.isatty(),
        unit="repeat",
        desc=f"{setup.name} (opid)",
        file=sys.stderr,
    )
    with bar:
        results = opid.run(setup, settings, args.datasets_dir, bar.update)
    if args.json:
        json.dump(opid.to_json(results), sys.stdout, indent=2)
        print()
        return 0
    print(
        f"protocol opid: {setup.name}, c = {len(setup.classes)}, Σnᵢ = {setup.c_stage_rows}, "
        f"d_v/d_s/d_a = {setup.vanished}/{setup.survived}/{setup.augmented}, {settings.repeats} repeats "
        f"(seed {settings.seed}); test accuracy, mean (std)"
    )
    print(opid.format_table(results))
    missed = [c for c in opid.checks(results) if not c.met]
    for c in missed:
        print(f"target missed: n = {c.n}, {c.method} {c.ours:.4f}, rule {c.rule} (printed {c.printed})")
    return 0
