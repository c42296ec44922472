"""How much each protocol row moves when every input moves by one unit in the last place.

A learner that compares a score with a threshold (the sign at 0, a hinge at margin 1) can meet
the threshold exactly: on binary features such as mushrooms' every L2-normalised value is
``1 / sqrt(nnz)``, so sums of them land on 0 or 1 up to rounding. Which side rounding puts such
a score decides an update, and the rest of the stream follows it. Such a row is as reproducible
as the rounding of its inputs: a library that computes the normalisation one ulp differently
gives other digits.

The check re-runs every protocol row at its picked setting, on its permutations, with every
L2-normalised value multiplied by ``1 + 2**-52`` and by ``1 - 2**-53`` (one ulp up and down for
values in [0.5, 1), at most one ulp elsewhere), and reports each row's headline under the three
readings.
"""

from __future__ import annotations

import sys
from typing import Any

from bench.reproduction.extras import algorithm_of
from bench.reproduction.plans import BLOCKS, Plan
from bench.reproduction.runs import dataset, run_stream
from bench.reproduction.verdicts import STAT_KEYS
from research.protocols import online as ev

SCALES = {"up": 1.0 + 2.0**-52, "down": 1.0 - 2.0**-53}
"""The factors every normalised input is multiplied by."""


def rounding_check(plan: Plan, result: dict[str, Any]) -> dict[str, Any]:
    """Every protocol row at its picked setting, with the inputs moved by one ulp each way.

    Returns ``{"block:ALGORITHM": {"up": summary, "down": summary}}``.
    """
    data = dataset(plan.dataset)
    orders = ev.permutations(data, result["permutations"], result["seed"])
    out: dict[str, Any] = {}
    for job in result["jobs"]:
        for row in job["rows"]:
            key = f"{job['block']}:{row['algorithm']}"
            print(f"[{plan.dataset}] rounding {key}", file=sys.stderr, flush=True)
            params = row["best"]["params"]
            out[key] = {
                name: run_stream(data, algorithm_of(row["algorithm"]), params, orders, scale=scale)
                for name, scale in SCALES.items()
            }
    return {"permutations": result["permutations"], "seed": result["seed"], "rows": out}


def moved_rows(plan: Plan, result: dict[str, Any]) -> list[tuple[str, str, float, float, float]]:
    """``(block, algorithm, as is, up, down)`` headline means of the rows whose printed headline
    changes under a one-ulp move (the headline at three decimals, in the table's unit)."""
    rounding = result.get("rounding", {}).get("rows", {})
    moved = []
    for job in result["jobs"]:
        for row in job["rows"]:
            stat = STAT_KEYS[row["metric"]][0]
            scale = plan.cost_scale if row["metric"] == "cost" else 1.0
            check = rounding.get(f"{job['block']}:{row['algorithm']}")
            if check is None:
                continue
            means = [row["best"][stat]["mean"] * scale] + [check[s][stat]["mean"] * scale for s in SCALES]
            if len({f"{m:.3f}" for m in means}) > 1:
                moved.append((job["block"], row["algorithm"], *means))
    return moved


def rounding_note(plan: Plan, result: dict[str, Any]) -> str:
    """One line of the data set's notes: which rows sit on rounding ties, and how far they move."""
    rounding = result.get("rounding", {}).get("rows")
    if not rounding:
        return ""
    moved = moved_rows(plan, result)
    head = (
        "- Rounding: every protocol row was re-run at its picked setting with each normalised input "
        "multiplied by 1 + 2^-52 and by 1 - 2^-53 (one ulp up and down). "
    )
    if not moved:
        return head + f"None of the {len(rounding)} rows changes its printed headline."
    listed = "; ".join(
        f"{algorithm} ({BLOCKS[block]}) {mean:.3f}, {up:.3f} up, {down:.3f} down"
        for block, algorithm, mean, up, down in moved
    )
    return (
        head + f"{len(moved)} of the {len(rounding)} rows change their printed headline: {listed}. "
        "In each, some score in the stream lies within rounding of a threshold (the sign at 0, the hinge "
        "at 1; binary features make such ties exact in real arithmetic), and the side rounding puts it "
        "on decides an update: these digits are only as reproducible as the last bit of the normalised "
        "inputs."
    )
