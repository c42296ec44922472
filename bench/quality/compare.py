"""``--only A,B``: a few rows on the same orders, and the paired difference of each row to the first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.quality.cells import cell
from bench.quality.protocol import ALPHA_P, C_P


def per_order(rec: dict[str, Any], metric: str, n: int) -> np.ndarray:
    """Sum % (``metric="sum"``) or cost per 1000 examples of each order."""
    t_p, t_n, m_p, m_n = np.asarray(rec[metric]["counts"], dtype=np.float64).T
    if metric == "sum":
        sens = 100.0 * (t_p - m_p) / np.maximum(t_p, 1)
        spec = 100.0 * (t_n - m_n) / np.maximum(t_n, 1)
        return np.asarray(ALPHA_P * sens + (1.0 - ALPHA_P) * spec)
    return np.asarray(1000.0 * (C_P * m_p + (1.0 - C_P) * m_n) / n)


def paired(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` over the orders both ran (the first ones: orders are prefixes of one sequence)."""
    k = min(len(a), len(b))
    return np.asarray(a[:k] - b[:k])


def spread(values: np.ndarray) -> float:
    """Sample standard deviation (0 for a single value)."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def compare_lines(results: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[str]:
    """A markdown table: per data set and row, mean sum % and cost/1000 (sample std over orders), and
    for every row after the first the mean paired difference to the first (± its std); then the means
    over data sets."""
    base = keys[0]
    lines = [
        f"| data set | d | orders | row | sum % | cost/1000 | sum - {base} | cost/1000 - {base} |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    totals: dict[str, list[tuple[float, float]]] = {k: [] for k in keys}
    for r in results:
        rec, n = r["records"], r["n"]
        for key in keys:
            s, c = cell(rec[key]["sum"], "sum", n), cell(rec[key]["cost"], "cost", n)
            totals[key].append((s.per1000, c.per1000))
            diff = ""
            if key != base:
                ds, dc = (
                    paired(per_order(rec[key], m, n), per_order(rec[base], m, n)) for m in ("sum", "cost")
                )
                diff = f"{ds.mean():+.2f} ± {spread(ds):.2f} | {dc.mean():+.2f} ± {spread(dc):.2f}"
            else:
                diff = "— | —"
            lines.append(
                f"| {r['name']} | {r['d']} | {s.orders} | {key} | {s.value:.2f} ± {s.std:.2f} | "
                f"{c.per1000:.2f} | {diff} |"
            )
    for key in keys:
        means = np.mean(np.array(totals[key]), axis=0)
        lines.append(f"| mean of {len(results)} | | | {key} | {means[0]:.2f} | {means[1]:.2f} | | |")
    return lines
