"""The markdown tables of the results: per data set, the summary, and the defaults against hindsight."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bench.quality.cells import dataset_cells
from bench.quality.paper import PAPER_ROWS, paper_acog_ii
from bench.quality.protocol import METRICS
from bench.quality.systems import GROUP_NAMES, labels_of


def fmt(x: float, digits: int = 2) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def dataset_table(result: dict[str, Any], paper: dict[str, float] | None) -> list[str]:
    n = result["n"]
    names = labels_of()
    lines = [
        f"#### {result['name']}",
        "",
        f"{n} rows x {result['d']} features, {result['positives']} positives (T_n/T_p = "
        f"{result['ratio']:.3f}); {result['permutations']} permutations (scikit-learn: "
        f"{result['sklearn_permutations']}); {result['seconds']:.0f} s.",
        "",
        "| system | kind | sum % | sens % | spec % | cost | cost/1000 | sens % | spec % | ms/pass |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, per in dataset_cells(result).items():
        label, group = names.get(key, (key, "?"))
        s, s_eta = per["sum"]
        c, c_eta = per["cost"]
        if s_eta is not None:
            label += f" (eta {s_eta:g} / {c_eta:g})"
        lines.append(
            f"| {label} | {GROUP_NAMES[group]} | {fmt(s.value)} ± {fmt(s.std)} | {fmt(s.sens, 1)} | "
            f"{fmt(s.spec, 1)} | {fmt(c.value, 1)} ± {fmt(c.std, 1)} | {fmt(c.per1000)} | "
            f"{fmt(c.sens, 1)} | {fmt(c.spec, 1)} | {1000 * (s.seconds + c.seconds) / 2:.0f} |"
        )
    if paper:
        rows = PAPER_ROWS.get(result["name"], n)
        cost = paper.get("cost")
        per1000 = "—" if cost is None else f"{1000 * cost / rows:.2f}"
        lines.append(
            f"| ACOG-II, paper's printed figures | hindsight (not online) | {paper['sum']:.2f} | | | "
            f"{'—' if cost is None else f'{cost:.1f}'} | {per1000} | | | |"
        )
    return lines


def summary_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "| system | kind | mean sum % | mean sum rank | mean cost/1000 | mean cost rank | us/label |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {GROUP_NAMES[r['group']]} | {r['sum']:.2f} | {fmt(r['sum_rank'], 1)} | "
            f"{r['cost1000']:.2f} | {fmt(r['cost_rank'], 1)} | {r['us_label']:.1f} |"
        )
    return lines


def hindsight_lines(results: Sequence[dict[str, Any]]) -> list[str]:
    """Per data set: the defaults against the hindsight-tuned eta (ours and the paper's) and VW."""
    paper = paper_acog_ii()
    lines = [
        "| data set | defaults sum % | hindsight, paper protocol | hindsight, defaults' config | paper "
        "ACOG-II | VW | defaults cost/1000 | hindsight, paper protocol | hindsight, defaults' config | "
        "paper ACOG-II | VW |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cells = dataset_cells(r)
        if "service:defaults" not in cells:
            continue
        p = paper.get(r["name"], {})
        row = [r["name"]]
        for metric in METRICS:
            for key in ("service:defaults", "hindsight:paper", "hindsight:defaults"):
                row.append(fmt(cells[key][metric][0].per1000) if key in cells else "—")
            if metric == "sum":
                row.append(fmt(p["sum"]) if "sum" in p else "—")
            else:
                rows = PAPER_ROWS.get(r["name"], r["n"])
                row.append(fmt(1000 * p["cost"] / rows) if "cost" in p else "—")
            row.append(fmt(cells["peer:vw"][metric][0].per1000) if "peer:vw" in cells else "—")
        lines.append("| " + " | ".join(row) + " |")
    return lines
