"""The missed rows of a data set, the generic checks under each (grid, seeds), and its cause."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.reproduction.paper import PaperRow
from bench.reproduction.plans import Plan
from bench.reproduction.runs import extra_row, job_rows
from bench.reproduction.verdicts import CELL_NAMES, STAT_KEYS, Compared, our_cells, tuned, verdict


def grid_check(plan: Plan, row: dict[str, Any], metric: str, paper: PaperRow) -> str:
    """Which tried setting (if any) reproduces the paper's cells for this row."""
    printed = paper.cells[metric]
    scored = []
    for tried in row["tried"]:
        cells = our_cells(tried, metric, plan.cost_scale)
        verdicts = [verdict(m, p)[1] for m, p in zip(cells, printed, strict=False)]
        head = abs(verdict(cells[0], printed[0])[0])
        scored.append((tried["params"], cells, verdicts, head))
    if len(scored) < 2:
        return ""
    exact = [tuned(p) for p, _, v, _ in scored if all(x == "equal" for x in v)]
    if exact:
        return f"Grid: {', '.join(exact)} gives every printed cell of this row exactly (not the best mean)."
    inside = [s for s in scored if "miss" not in s[2]]
    params, cells, _, _ = min(inside or scored, key=lambda s: s[3])
    closest = f"{'best' if inside else 'closest'} headline {tuned(params)}: {cells[0]}"
    if inside:
        return (
            f"Grid: {', '.join(tuned(s[0]) for s in inside)} would put every cell within spread; {closest}."
        )
    return f"Grid: no value puts every cell within spread; {closest}."


def seed_note(plan: Plan, result: dict[str, Any], block: str, algorithm: str, metric: str) -> str:
    spread = result.get("extras", {}).get("seeds", {}).get(f"{block}:{algorithm}")
    if not spread:
        return ""
    key = STAT_KEYS[metric][0]
    scale = plan.cost_scale if metric == "cost" else 1.0
    ours = (
        next(r for r in job_rows(result, block) if r["algorithm"] == algorithm)["best"][key]["mean"] * scale
    )
    means = [ours] + [s[key]["mean"] * scale for s in spread.values()]
    return f"Seeds 0-{len(means) - 1}: mean {CELL_NAMES[metric][0]} {min(means):.3f} .. {max(means):.3f}."


@dataclass
class Miss:
    """The missed cells of one row (algorithm and run), and what explains them."""

    algorithm: str
    block: str
    cells: list[Compared]
    notes: list[str] = field(default_factory=list)
    """The grid check first, then the seed spread."""
    cause: str = ""


def misses(
    plan: Plan, result: dict[str, Any], paper: dict[str, PaperRow], compared: Sequence[Compared]
) -> list[Miss]:
    """Group the missed cells by row, with the generic checks (grid, seeds) attached."""
    groups: dict[tuple[str, str], Miss] = {}
    for c in compared:
        if c.verdict == "miss":
            groups.setdefault((c.algorithm, c.block), Miss(c.algorithm, c.block, [])).cells.append(c)
    for (algorithm, block), miss in groups.items():
        metric = "cost" if block.endswith("cost") else "sum"
        row = next(r for r in job_rows(result, block) if r["algorithm"] == algorithm)
        miss.notes = [
            grid_check(plan, row, metric, paper[algorithm]),
            seed_note(plan, result, block, algorithm, metric),
        ]
        miss.cause = cause(plan, result, paper, miss)
    return list(groups.values())


CAUSES = (
    "another grid value",
    "between grid points",
    "PAUM ran with the sum rho",
    "another reading of the data",
    "baseline differs in form",
    "not explained",
)
"""What brings a missed row within spread, tried in this order (see :func:`cause`)."""


def fits(plan: Plan, summary: dict[str, Any], metric: str, paper: PaperRow) -> bool:
    """No cell of this summary misses the paper's row."""
    cells = our_cells(summary, metric, plan.cost_scale)
    return all(verdict(m, p)[1] != "miss" for m, p in zip(cells, paper.cells[metric], strict=False))


def paum_with_sum_rho(result: dict[str, Any], algorithm: str) -> dict[str, Any] | None:
    """PAUM's cost row run with the sum rho (an extra job, or german's fixed row), with its command."""
    if algorithm != "PAUM":
        return None
    jobs = [result.get("extras", {}).get("jobs", {}).get("paum-cost-sum-rho")]
    jobs += [j for j in result["jobs"] if j["block"] == "fixed-cost"]
    for job in filter(None, jobs):
        for row in job["rows"]:
            if row["algorithm"] == "PAUM":
                return {**row, "command": job["command"]}
    return None


def variant_tally(plan: Plan, result: dict[str, Any], paper: dict[str, PaperRow]) -> dict[str, int]:
    """Cells not missed, over every compared row, as registered and under each other reading."""
    ours: dict[tuple[str, str], dict[str, Any]] = {}
    for job in result["jobs"]:
        if job["block"] in ("sum", "cost"):
            ours.update({(r["algorithm"], job["block"]): r["best"] for r in job["rows"]})
    columns = {"as registered": ours}
    for name, variant in result.get("extras", {}).get("variants", {}).items():
        columns[name] = {(r["algorithm"], r["metric"]): r["best"] for r in variant["rows"]}
    tally = dict.fromkeys(columns, 0)
    for algorithm, metric in ours:
        if algorithm in paper and metric in paper[algorithm].cells:
            printed = paper[algorithm].cells[metric]
            for name, per in columns.items():
                mine = our_cells(per[(algorithm, metric)], metric, plan.cost_scale)
                tally[name] += sum(verdict(m, q)[1] != "miss" for m, q in zip(mine, printed, strict=False))
    return tally


def plausible_variants(plan: Plan, result: dict[str, Any], paper: dict[str, PaperRow]) -> list[str]:
    """Other readings that fit more cells of the paper overall than the registered one."""
    tally = variant_tally(plan, result, paper)
    return [name for name, n in tally.items() if name != "as registered" and n > tally["as registered"]]


def cause(plan: Plan, result: dict[str, Any], paper: dict[str, PaperRow], miss: Miss) -> str:
    """The first of :data:`CAUSES` whose run puts every cell of the missed row within spread."""
    metric = "cost" if miss.block.endswith("cost") else "sum"
    printed, extras = paper[miss.algorithm], result.get("extras", {})
    row = next(r for r in job_rows(result, miss.block) if r["algorithm"] == miss.algorithm)
    if len(row["tried"]) > 1 and any(fits(plan, t, metric, printed) for t in row["tried"]):
        return CAUSES[0]
    fine = extra_row(extras, f"fine-{metric}", miss.algorithm)
    if fine and miss.block != "laplace" and any(fits(plan, t, metric, printed) for t in fine["tried"]):
        return CAUSES[1]
    alt = paum_with_sum_rho(result, miss.algorithm) if metric == "cost" else None
    if alt and fits(plan, alt["best"], metric, printed):
        return CAUSES[2]
    for name in plausible_variants(plan, result, paper):
        for r in extras["variants"][name]["rows"]:
            if (r["algorithm"], r["metric"]) == (miss.algorithm, metric) and fits(
                plan, r["best"], metric, printed
            ):
                return CAUSES[3]
    if miss.algorithm in ("CPAPB", "ROMMA"):
        return CAUSES[4]
    return CAUSES[5]
