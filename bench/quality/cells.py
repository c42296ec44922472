"""Measures from the cached counts: each system's mean (and spread) over the orders of a data set."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.quality.protocol import ALPHA_P, C_P, METRICS
from bench.quality.systems import HINDSIGHT


@dataclass(frozen=True)
class Cell:
    """Mean (and sample std) over orders of one system's measures on one data set and measure."""

    value: float  # sum % or cost (raw)
    std: float
    per1000: float  # cost per 1000 examples (cost runs), or the sum % again
    sens: float
    spec: float
    seconds: float
    orders: int


def cell(rec: dict[str, Any], metric: str, n: int) -> Cell:
    counts = np.asarray(rec["counts"], dtype=np.float64)
    t_p, t_n, m_p, m_n = counts.T
    sens = 100.0 * (t_p - m_p) / np.maximum(t_p, 1)
    spec = 100.0 * (t_n - m_n) / np.maximum(t_n, 1)
    sums = ALPHA_P * sens + (1.0 - ALPHA_P) * spec
    values = sums if metric == "sum" else C_P * m_p + (1.0 - C_P) * m_n
    std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    mean = float(np.mean(values))
    per1000 = mean if metric == "sum" else 1000.0 * mean / n
    return Cell(mean, std, per1000, float(np.mean(sens)), float(np.mean(spec)),
                float(np.mean(rec["seconds"])), len(values))  # fmt: skip


def hindsight_cell(result: dict[str, Any], kind: str, metric: str) -> tuple[Cell, float] | None:
    """The best eta's cell (best mean sum, lowest mean cost) and that eta."""
    options = [(k, v) for k, v in result["records"].items() if k.startswith(kind + "@")]
    if not options:
        return None
    cells = [(cell(v[metric], metric, result["n"]), float(k.split("@")[1])) for k, v in options]
    sign = 1.0 if metric == "sum" else -1.0
    return max(cells, key=lambda ce: sign * ce[0].value)


def dataset_cells(result: dict[str, Any]) -> dict[str, dict[str, tuple[Cell, float | None]]]:
    """``{system key: {metric: (cell, eta or None)}}`` for one data set, hindsight rows resolved."""
    out: dict[str, dict[str, tuple[Cell, float | None]]] = {}
    for key, rec in result["records"].items():
        if "@" in key:
            continue
        out[key] = {m: (cell(rec[m], m, result["n"]), None) for m in METRICS}
    for kind in HINDSIGHT:
        per = {m: hindsight_cell(result, kind, m) for m in METRICS}
        if all(v is not None for v in per.values()):
            out[kind] = {m: v for m, v in per.items() if v is not None}
    return out
