"""The markdown tables of the report: comparisons and wall times."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from bench.reproduction.plans import BLOCKS
from bench.reproduction.runs import job_rows
from bench.reproduction.verdicts import Compared


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def comparison_table(compared: Sequence[Compared]) -> list[str]:
    return table(
        ("algorithm", "run", "picked", "cell", "ours", "paper", "diff", "verdict"),
        (
            (c.algorithm, BLOCKS[c.block], c.param, c.cell, c.ours, c.paper.text, f"{c.diff:+.3f}", c.verdict)
            for c in compared
        ),
    )


def times_table(result: dict[str, Any]) -> list[str]:
    blocks = [b for b in BLOCKS if any(j["block"] == b for j in result["jobs"])]
    seconds: dict[str, dict[str, str]] = {}
    for block in blocks:
        for row in job_rows(result, block):
            s = row["best"]["seconds"]
            seconds.setdefault(row["algorithm"], {})[block] = f"{s['mean'] * 1000:.2f}"
    return table(
        ("algorithm", *(f"{BLOCKS[b]} (ms)" for b in blocks)),
        ((a, *(per.get(b, "—") for b in blocks)) for a, per in seconds.items()),
    )
