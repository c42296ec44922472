"""Verdicts: our printed cells against the paper's, by the rule stated at the top of the report."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bench.reproduction.paper import Figure, PaperRow
from bench.reproduction.plans import Plan

RULE = (
    "**equal**: our mean and our standard deviation, printed to three decimals, are the paper's printed "
    "digits. **within spread**: otherwise, when |diff| <= the paper's printed standard deviation, where "
    "diff = our printed mean - the paper's printed mean (the permutations of the other data sets are "
    "unknown, so a mean inside the spread the paper reports across its 20 permutations is as close as "
    "one can ask). **miss**: everything else. The rule is applied to every compared cell alike."
)


def fmt(mean: float, std: float) -> str:
    return f"{mean:.3f} ± {std:.3f}"


def verdict(ours: str, paper: Figure) -> tuple[float, str]:
    """``(diff, verdict)`` for our printed ``mean ± std`` against the paper's figure."""
    mine = Figure.parse(ours)
    diff = round(mine.mean - paper.mean, 3)
    if mine.text == paper.text:
        return diff, "equal"
    if paper.std is not None and abs(diff) <= paper.std + 1e-9:
        return diff, "within spread"
    return diff, "miss"


CELL_NAMES = {"sum": ("sum %", "sens %", "spec %"), "cost": ("cost", "sens %", "spec %")}
STAT_KEYS = {
    "sum": ("sum_percent", "sensitivity_percent", "specificity_percent"),
    "cost": ("cost_hundreds", "sensitivity_percent", "specificity_percent"),
}


def our_cells(summary: dict[str, Any], metric: str, cost_scale: float) -> list[str]:
    cells = []
    for key in STAT_KEYS[metric]:
        scale = cost_scale if key == "cost_hundreds" else 1.0
        cells.append(fmt(summary[key]["mean"] * scale, summary[key]["std"] * scale))
    return cells


def tuned(params: dict[str, Any]) -> str:
    """The grid-picked hyper-parameter, or the fixed one that matters for the row."""
    for key in ("eta", "C", "r"):
        if key in params:
            return f"{key}={params[key]:g}"
    if isinstance(params.get("rho"), float) and not math.isclose(params["rho"], 9.0):
        return f"rho={params['rho']:.6g}"
    return "—"


@dataclass
class Compared:
    """One compared cell of the report."""

    algorithm: str
    block: str
    param: str
    cell: str
    ours: str
    paper: Figure
    diff: float
    verdict: str


def compare(plan: Plan, result: dict[str, Any], paper: dict[str, PaperRow]) -> list[Compared]:
    """Every cell of every row of this data set that the paper prints."""
    out = []
    for job in result["jobs"]:
        block = job["block"]
        metric = "cost" if block.endswith("cost") else "sum"
        for row in job["rows"]:
            printed = paper.get(row["algorithm"])
            if printed is None or metric not in printed.cells:
                continue
            ours = our_cells(row["best"], metric, plan.cost_scale)
            for name, mine, theirs in zip(CELL_NAMES[metric], ours, printed.cells[metric], strict=False):
                diff, v = verdict(mine, theirs)
                out.append(
                    Compared(
                        row["algorithm"], block, tuned(row["best"]["params"]), name, mine, theirs, diff, v
                    )
                )
    return out


VERDICTS = ("equal", "within spread", "miss")


def counts(compared: Iterable[Compared]) -> dict[str, int]:
    out = dict.fromkeys(VERDICTS, 0)
    for c in compared:
        out[c.verdict] += 1
    return out
