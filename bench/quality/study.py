"""The defaults study: which configuration should eta="auto" and the service use?

The members of an eta grid are independent learners, so each configuration's members are
run once per order and measure over a wide grid, and every selection rule and sub-grid is
then evaluated offline from the members' online predictions. The "leader" and "window"
rules replay EtaGrid exactly (checked against EtaGrid.run on every data set).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from bench.peers import run_peer
from bench.quality.candidates import SERVICE_BASES, WIDE_GRID, Base, oracle_label, study_candidates
from bench.quality.protocol import COST_RHO, METRICS, OBJECTIVE, TUNING, load_stream, warm
from bench.quality.selection import select
from bench.quality.study_section import study_table
from bench.quality.systems import peer_rho, service_config
from service.datasets import l2_normalize
from service.learners import DEFAULT_GRID, create
from service.measures import Measures


def online_standardize(X: sp.csr_matrix, kind: str) -> sp.csr_matrix:
    """Each row standardised with the running mean and std of the rows *before* it (an online
    transform a service could apply), then L2-normalised. ``zscore`` centres and scales (dense);
    ``scale`` only divides by the running std (keeps sparsity). Features with no spread yet are
    left unscaled."""
    dense = X.toarray()
    n = dense.shape[0]
    s1 = np.cumsum(dense, axis=0) - dense
    s2 = np.cumsum(dense * dense, axis=0) - dense * dense
    count = np.arange(n, dtype=np.float64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, s1 / np.maximum(count, 1), 0.0)
        var = np.where(count > 1, (s2 - count * mean * mean) / np.maximum(count - 1, 1), 0.0)
    sd = np.sqrt(np.maximum(var, 0.0))
    sd = np.where(sd > 1e-12, sd, 1.0)
    out = (dense - mean) / sd if kind == "zscore" else dense / sd
    return l2_normalize(sp.csr_matrix(out))


def member_predictions(
    base: Base, X: sp.csr_matrix, y: np.ndarray, metric: str, grid: Sequence[float] = WIDE_GRID
) -> np.ndarray:
    """``(n, len(grid))`` int8: each member's online predictions (one learner per eta)."""
    rho: float | str = "laplace" if metric == "sum" else COST_RHO
    cols = []
    for eta in grid:
        learner = create(
            base.algorithm, X.shape[1], loss=base.loss, eta=eta, rho=rho,
            fit_intercept=base.fit_intercept, intercept_value=base.intercept_value,
        )  # fmt: skip
        cols.append(learner.run(X, y).predictions)
    return np.stack(cols, axis=1)


def run_study(args: argparse.Namespace) -> int:
    """Evaluate every :func:`study_candidates` entry on every data set; print and write the table."""
    names = list(args.datasets) or list(TUNING)
    candidates = study_candidates()
    bases = list(dict.fromkeys(b for c in candidates for b in c.bases))
    results: dict[str, dict[str, dict[str, float]]] = {}  # label -> data set -> metric -> value
    vw: dict[str, dict[str, dict[str, float]]] = {}  # the same, for the VW rows
    started = time.perf_counter()
    for name in names:
        stream = load_stream(name, args)
        warm(stream)
        t0 = time.perf_counter()
        per: dict[str, dict[str, list[float]]] = {}

        def add(label: str, metric: str, y: np.ndarray, preds: np.ndarray, per: dict[str, Any] = per) -> None:
            m = Measures.of(y, preds, OBJECTIVE)
            value = 100.0 * m.weighted_sum if metric == "sum" else 1000.0 * m.weighted_cost / len(y)
            per.setdefault(label, {}).setdefault(metric, []).append(value)

        for j, order in enumerate(stream.orders):
            X, y = stream.X[order], stream.y[order]
            transformed = {"l2": X}
            for kind in ("zscore", "scale"):
                if any(b.transform == kind for b in bases):
                    transformed[kind] = online_standardize(X, kind)
            for metric in METRICS:
                members = {b: member_predictions(b, transformed[b.transform], y, metric) for b in bases}
                if j == 0:  # the offline replay equals EtaGrid itself
                    cfg = service_config(stream, metric)
                    real = cfg.build_learner().run(X, y).predictions
                    cols = [WIDE_GRID.index(e) for e in DEFAULT_GRID]
                    service = np.concatenate([members[b][:, cols] for b in SERVICE_BASES], axis=1)
                    assert np.array_equal(real, select(service, y, metric, "leader"))
                    w_cfg = service_config(stream, metric, selection="window", selection_window=500)
                    real = w_cfg.build_learner().run(X, y).predictions
                    assert np.array_equal(real, select(service, y, metric, "window", 500))
                for c in candidates:
                    cols = [WIDE_GRID.index(e) for e in c.grid]
                    P = np.concatenate([members[b][:, cols] for b in c.bases], axis=1)
                    add(c.label, metric, y, select(P, y, metric, c.rule, c.param))
                for b in bases:
                    for col in range(len(WIDE_GRID)):
                        add(f"{b.label}@{WIDE_GRID[col]:g}", metric, y, members[b][:, col])
                if not args.no_peers:
                    for kind in ("l2", "zscore", "scale"):
                        if kind not in transformed:
                            continue
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            preds = run_peer(
                                "vw", transformed[kind], y, rho=peer_rho(stream, metric)
                            ).predictions
                        add(f"  peer: VW (classweight), {kind}", metric, y, preds)
        # the best single eta in hindsight, per base
        for b in bases:
            for metric in METRICS:
                sign = 1.0 if metric == "sum" else -1.0
                best = max(
                    (float(np.mean(per[f"{b.label}@{e:g}"][metric])) for e in WIDE_GRID),
                    key=lambda v: sign * v,
                )
                results.setdefault(oracle_label(b), {}).setdefault(stream.name, {})[metric] = best
        for label, metrics in per.items():
            if "@" in label:
                continue
            target = vw if label.startswith("  peer:") else results
            target.setdefault(label, {})[stream.name] = {m: float(np.mean(v)) for m, v in metrics.items()}
        print(
            f"{name}: {len(stream.orders)} orders, {time.perf_counter() - t0:.0f}s",
            file=sys.stderr,
            flush=True,
        )
    out = Path(args.results_dir) / "study.json"
    Path(args.results_dir).mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"results": results, "vw": vw, "datasets": names,
                               "seconds": time.perf_counter() - started}))  # fmt: skip
    text = "\n".join(study_table(results, vw, names))
    print(text)
    return 0
