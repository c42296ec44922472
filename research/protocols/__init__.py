"""The evaluation protocols ``acog evaluate --protocol NAME`` can run: one registry entry each.

A protocol adds its own options (in an argument group named after it) and runs from the parsed
arguments; the options every protocol shares (the data set, ``--algorithms``, ``--seed``,
``--datasets-dir``, ``--json``) are :func:`research.cli.add_arguments`'s. Each runner
prints which protocol ran.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Protocol:
    """One way of turning a data set into figures."""

    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _no_options(parser: argparse.ArgumentParser) -> None:
    """The online protocol's options are the command's own (see :mod:`research.cli`)."""


def _run_online(args: argparse.Namespace) -> int:
    from .online_cli import run_online

    return run_online(args)


def _oli2ds_options(parser: argparse.ArgumentParser) -> None:
    from .oli2ds_cli import add_arguments

    add_arguments(parser)


def _sdrogd_options(parser: argparse.ArgumentParser) -> None:
    from .sdrogd_cli import add_arguments

    add_arguments(parser)


def _run_oli2ds(args: argparse.Namespace) -> int:
    from .oli2ds_cli import run

    return run(args)


def _run_opid(args: argparse.Namespace) -> int:
    from .opid_cli import run_opid

    return run_opid(args)


def _run_sdrogd(args: argparse.Namespace) -> int:
    from .sdrogd_cli import run

    return run(args)


PROTOCOLS: dict[str, Protocol] = {
    "online": Protocol(
        "the ACOG paper's: permutations of the stream, predict then learn every label "
        "(progressive validation); sum, cost, sensitivity, specificity",
        _no_options,
        _run_online,
    ),
    "oli2ds": Protocol(
        "the OLI2DS code's: standardise, 10 shuffled rounds, trapezoidal or capricious missing "
        "features, one pass; final F1 and G-mean",
        _oli2ds_options,
        _run_oli2ds,
    ),
    "opid": Protocol(
        "the OPID paper's Table 2: C-stage on the old features, class-balanced E-stage draws, "
        "liblinear baselines (the bench extra); --permutations repeats, --seed seeds the draws",
        _no_options,
        _run_opid,
    ),
    "sdrogd": Protocol(
        "the SDROGD paper's: random 80/20 split, 3-fold CV over the paper's grids on the 80 %, "
        "one pass, repeated; test accuracy and AUC",
        _sdrogd_options,
        _run_sdrogd,
    ),
}
