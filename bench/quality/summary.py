"""The summary over data sets (mean measures and ranks), the first defaults' target and the goal, met
or missed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import rankdata

from bench.quality.cells import dataset_cells
from bench.quality.protocol import METRICS
from bench.quality.systems import HINDSIGHT, labels_of

MAIN_GROUPS = ("service", "peer")


def summary(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per system: mean over data sets of sum %, cost/1000 and their ranks (ranked within the
    service-defaults rows and the peers; create() and hindsight rows get values only)."""
    names = labels_of()
    per_ds = [dataset_cells(r) for r in results]
    keys = list(dict.fromkeys(k for cells in per_ds for k in cells))
    ranks: dict[str, dict[str, list[float]]] = {k: {"sum": [], "cost": []} for k in keys}
    for cells in per_ds:
        main = [k for k in cells if names.get(k, ("", ""))[1] in MAIN_GROUPS]
        for metric in METRICS:
            sign = -1.0 if metric == "sum" else 1.0
            values = np.array([sign * cells[k][metric][0].per1000 for k in main])
            for k, r in zip(main, rankdata(values, method="average"), strict=True):
                ranks[k][metric].append(float(r))
    out = []
    for k in keys:
        present = [cells[k] for cells in per_ds if k in cells]
        if len(present) != len(per_ds):
            continue
        label, group = names.get(k, (k, "?"))
        out.append(
            {
                "key": k,
                "label": label,
                "group": group,
                "sum": float(np.mean([c["sum"][0].per1000 for c in present])),
                "cost1000": float(np.mean([c["cost"][0].per1000 for c in present])),
                "sum_rank": float(np.mean(ranks[k]["sum"])) if ranks[k]["sum"] else math.nan,
                "cost_rank": float(np.mean(ranks[k]["cost"])) if ranks[k]["cost"] else math.nan,
                "us_label": float(
                    np.mean(
                        [
                            1e6 * (c[k]["sum"][0].seconds + c[k]["cost"][0].seconds) / 2 / r["n"]
                            for c, r in zip(per_ds, results, strict=True)
                            if k in c
                        ]
                    )
                ),
            }
        )
    return out


def best_peers(rows: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The peer rows of the best mean sum and of the lowest mean cost, or None when no peer ran."""
    peers = [r for r in rows if r["group"] == "peer"]
    if not peers:
        return None
    return max(peers, key=lambda r: r["sum"]), min(peers, key=lambda r: r["cost1000"])


def target_lines(results: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> list[str]:
    """The first defaults' target: ahead of every peer on mean sum and mean cost; within 1 point of the
    hindsight-tuned eta on sum."""
    by = {r["key"]: r for r in rows}
    d, best = by.get("service:defaults"), best_peers(rows)
    if d is None or best is None:
        return []
    best_sum, best_cost = best
    lines = [
        f"- Mean sum: defaults {d['sum']:.2f} % vs the best peer, {best_sum['label']}, "
        f"{best_sum['sum']:.2f} %: **{'met' if d['sum'] > best_sum['sum'] else 'missed'}** "
        f"({d['sum'] - best_sum['sum']:+.2f} points).",
        f"- Mean cost per 1000 examples: defaults {d['cost1000']:.2f} vs the best peer, "
        f"{best_cost['label']}, {best_cost['cost1000']:.2f}: "
        f"**{'met' if d['cost1000'] < best_cost['cost1000'] else 'missed'}** "
        f"({100 * (d['cost1000'] / best_cost['cost1000'] - 1):+.1f} %).",
    ]
    for kind in HINDSIGHT:
        h = by.get(kind)
        if h is None:
            continue
        gaps = []
        for result in results:
            cells = dataset_cells(result)
            gaps.append(
                (result["name"], cells["service:defaults"]["sum"][0].value - cells[kind]["sum"][0].value)
            )
        worst = min(gaps, key=lambda g: g[1])
        within = sum(g >= -1.0 for _, g in gaps)
        lines.append(
            f"- Sum against {h['label']}: mean {d['sum'] - h['sum']:+.2f} points "
            f"(**{'met' if d['sum'] - h['sum'] >= -1.0 else 'missed'}** on the mean); within 1 point on "
            f"{within} of {len(gaps)} data sets; worst {worst[0]} {worst[1]:+.2f}."
        )
    return lines


SUM_MARGIN = 2.0
COST_FACTOR = 0.85
STREAM_SLACK = 0.5


def goal_lines(
    results: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], key: str = "service:defaults"
) -> list[str]:
    """The goal for row ``key`` (the defaults), met or missed with the figures: mean sum >=
    best peer + 2 points; mean cost/1000 <= 0.85 x the best peer's; no data set more than 0.5 points
    of sum behind the best peer on that data set; its cost per label next to the peers'."""
    by = {r["key"]: r for r in rows}
    d, best = by.get(key), best_peers(rows)
    if d is None or best is None:
        return []
    best_sum, best_cost = best
    peers = [r for r in rows if r["group"] == "peer"]
    names = labels_of()
    gap = d["sum"] - best_sum["sum"]
    ratio = d["cost1000"] / best_cost["cost1000"]
    behind = []
    for result in results:
        cells = dataset_cells(result)
        peer_sums = [(v["sum"][0].value, k) for k, v in cells.items() if k.startswith("peer:")]
        top, peer = max(peer_sums)
        behind.append((cells[key]["sum"][0].value - top, result["name"], names.get(peer, (peer, ""))[0]))
    late = [b for b in behind if b[0] < -STREAM_SLACK]
    worst = min(behind)
    fastest = min(peers, key=lambda r: r["us_label"])
    peer_costs = ", ".join(f"{r['label']} {r['us_label']:.1f}" for r in peers)
    name = "defaults" if key == "service:defaults" else d["label"]
    return [  # noqa: RUF005
        f"- Mean sum >= best peer + {SUM_MARGIN:g}: {name} {d['sum']:.2f} % vs {best_sum['label']} "
        f"{best_sum['sum']:.2f} %: **{'met' if gap >= SUM_MARGIN else 'missed'}** ({gap:+.2f} points).",
        f"- Mean cost/1000 <= {COST_FACTOR:g} x best peer's: {name} {d['cost1000']:.2f} vs "
        f"{best_cost['label']} {best_cost['cost1000']:.2f}: "
        f"**{'met' if ratio <= COST_FACTOR else 'missed'}** "
        f"({ratio:.3f}x).",
        f"- No data set more than {STREAM_SLACK:g} points of sum behind its best peer: "
        f"**{'met' if not late else 'missed'}** ({len(late)} of {len(behind)} behind by more; worst "
        f"{worst[1]} {worst[0]:+.2f} against {worst[2]}).",
        f"- Cost per label (mean over data sets, one pass, predict + learn): {name} "
        f"{d['us_label']:.1f} us; peers {peer_costs} us "
        f"(fastest peer: {fastest['label']}, {name} at {d['us_label'] / fastest['us_label']:.2f}x).",
    ] + _amf_line(by, d, name)


def bound_lines(results: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> list[str]:
    """What picking in hindsight would reach: on each data set the best row of the run (ours, the
    create() rows and the peers alike; hindsight-tuned rows left out), averaged over the data sets,
    next to what the goal asks (the best peer's mean sum + ``SUM_MARGIN``, ``COST_FACTOR`` x the best
    peer's mean cost). A goal above this bound is not reached by choosing among the systems run,
    however well: only by a system that beats them all on some data set."""
    best = best_peers(rows)
    if best is None:
        return []
    peer_sum, peer_cost = best[0]["sum"], best[1]["cost1000"]
    names = labels_of()
    sums, costs = [], []
    for result in results:
        cells = {k: v for k, v in dataset_cells(result).items() if k not in HINDSIGHT}
        sums.append(max((v["sum"][0].per1000, k) for k, v in cells.items()))
        costs.append(min((v["cost"][0].per1000, k) for k, v in cells.items()))
    mean_sum = float(np.mean([s for s, _ in sums]))
    mean_cost = float(np.mean([c for c, _ in costs]))
    want_sum, want_cost = peer_sum + SUM_MARGIN, COST_FACTOR * peer_cost
    winners = sorted({names.get(k, (k, ""))[0] for _, k in sums + costs})
    return [
        f"- Bound in hindsight (the best row of this run on each data set, picked after the fact, "
        f"averaged): mean sum {mean_sum:.2f} % against the goal's {want_sum:.2f} % "
        f"({'above' if mean_sum >= want_sum else 'below'} it by {abs(mean_sum - want_sum):.2f} points); "
        f"mean cost/1000 {mean_cost:.2f} against the goal's {want_cost:.2f} "
        f"({'within' if mean_cost <= want_cost else 'above'} it). The rows picked: {', '.join(winners)}."
    ]


def _amf_line(by: dict[str, dict[str, Any]], d: dict[str, Any], name: str) -> list[str]:
    """Cost per label at most river AMF's (its mean over the same data sets), met or missed."""
    amf = by.get("peer:river-amf")
    if amf is None:
        return []
    ratio = d["us_label"] / amf["us_label"]
    return [
        f"- Cost per label <= river AMF's: {name} {d['us_label']:.1f} us vs {amf['us_label']:.1f} us: "
        f"**{'met' if ratio <= 1.0 else 'missed'}** ({ratio:.2f}x)."
    ]


def part_lines(results: Sequence[dict[str, Any]], parts: dict[str, set[str]]) -> list[str]:
    """The defaults against the best peer on each part of a set (``parts``: a label and the names of
    its data sets), so that a margin carried by one kind of stream shows: its mean sum and cost, the
    best peer's on that part and the margin."""
    lines = []
    for label, names in parts.items():
        chosen = [r for r in results if r["name"] in names]
        rows = {r["key"]: r for r in summary(chosen)}
        d, best = rows.get("service:defaults"), best_peers(list(rows.values()))
        if not chosen or d is None or best is None:
            continue
        best_sum, best_cost = best
        ratio = f"{d['cost1000'] / best_cost['cost1000']:.3f}x" if best_cost["cost1000"] > 0 else "no cost"
        lines.append(
            f"- On {label} ({len(chosen)}): defaults {d['sum']:.2f} % vs {best_sum['label']} "
            f"{best_sum['sum']:.2f} % ({d['sum'] - best_sum['sum']:+.2f} points); cost/1000 "
            f"{d['cost1000']:.2f} vs {best_cost['label']} {best_cost['cost1000']:.2f} ({ratio})."
        )
    return lines
