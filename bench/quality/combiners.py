"""The combiner study: how the default ensemble should turn its members into one prediction.

    .venv/bin/python -m bench.quality.combiners [--permutations 5] [--small-permutations 20]

Tuning set only (:data:`bench.quality.protocol.TUNING`). The members of the default ensemble
(``ModelConfig(n_features=d, objective=...)``, what a client gets) are independent learners, so they
run once per order and measure (on the raw rows, the ensemble normalising for its members), and
every combiner is replayed offline from their online scores:

- ``leader``: the member with the best objective since the start (today's rule; it replays
  :class:`service.learners.EtaGrid` exactly);
- ``window-W``: the same over the last ``W`` labels;
- ``fixed-share``: exponential weights over each member's class-balanced loss (a mistake on class
  ``y`` costs ``1 - p_y``, ``p_y`` the Laplace share of ``y`` so far, for sum; ``c_y`` for cost),
  rate ``eta``, share ``alpha`` (Herbster & Warmuth 1998); a weighted vote of the members;
- ``adanormalhedge``: the parameter-free AdaNormalHedge (Luo & Schapire 2015) over the same losses;
- ``stack``: ACOG-II (intercept, the objective's rho) over the members' predictions ``p / sqrt(K)``;
- ``threshold``: the leader over members *and* decision offsets ``theta`` on their scores.

Every rule prints its mean sum % and cost per 1000 over the tuning data sets, the spread over orders
(the mean over data sets of the sample std over orders) and the mean paired difference to ``leader``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np

from bench.quality.compare import spread
from bench.quality.protocol import ALPHA_P, C_P, COST_RHO, TUNING, load_stream
from bench.quality.selection import select
from service.learners import create
from service.model_config import ModelConfig

CACHE = Path("/tmp/acog-combiners")


def member_scores(X: Any, y: np.ndarray, d: int, metric: str, have: np.ndarray | None = None) -> np.ndarray:
    """``(n, K)`` online scores of the default ensemble's members on the raw rows ``X``; with
    ``have``, the scores of its first members already run (later families come last)."""
    learner: Any = ModelConfig(n_features=d, objective=metric).build_learner()
    start = 0 if have is None else have.shape[1]
    if have is not None and start == len(learner.members):
        return have
    streams = learner.inputs.streams(X, y)
    pairs = list(zip(learner.members, learner.member_forms, strict=True))[start:]
    new = np.stack([m.run(streams[f], y).scores for m, f in pairs], axis=1)
    return new if have is None else np.concatenate([have, new], axis=1)


@numba.njit(cache=False)
def _hedge(P: np.ndarray, y: np.ndarray, cost: bool, eta: float, alpha: float, ada: bool) -> np.ndarray:
    n, k = P.shape
    logw = np.zeros(k)
    R = np.zeros(k)
    C = np.zeros(k)
    out = np.empty(n, dtype=np.int8)
    pos = 0
    for t in range(n):
        if ada:
            w = np.zeros(k)
            for j in range(k):
                a = max(R[j] + 1.0, 0.0) ** 2 / (3.0 * (C[j] + 1.0))
                b = max(R[j] - 1.0, 0.0) ** 2 / (3.0 * (C[j] + 1.0))
                w[j] = (math.exp(min(a, 700.0)) - math.exp(min(b, 700.0))) / 2.0
            if w.sum() <= 0.0:
                w[:] = 1.0
        else:
            w = np.exp(logw - logw.max())
        w = w / w.sum()
        vote = 0.0
        for j in range(k):
            vote += w[j] * P[t, j]
        out[t] = 1 if vote >= 0.0 else -1
        if cost:
            c = C_P if y[t] == 1 else 1.0 - C_P
        else:
            p_y = ((pos + 1.0) if y[t] == 1 else (t - pos + 1.0)) / (t + 2.0)
            c = 1.0 - p_y
        loss = np.where(P[t] != y[t], c, 0.0)
        if ada:
            mean = (w * loss).sum()
            r = mean - loss
            R += r
            C += np.abs(r)
        else:
            logw -= eta * loss
            lw = np.exp(logw - logw.max())
            lw = (1.0 - alpha) * lw / lw.sum() + alpha / k
            logw = np.log(lw)
        if y[t] == 1:
            pos += 1
    return out


def _stack(P: np.ndarray, y: np.ndarray, metric: str, auto: bool) -> np.ndarray:
    k = P.shape[1]
    rho: Any = "laplace" if metric == "sum" else COST_RHO
    if auto:
        learner: Any = create(
            "acog", k, eta="auto", loss="auto", rho=rho, fit_intercept=True, objective=metric
        )
    else:
        learner = create("acog", k, loss="II", eta=1.0, rho=rho, fit_intercept=True)
    return np.asarray(learner.run(P.astype(np.float64) / math.sqrt(k), y).predictions)


def _threshold(S: np.ndarray, y: np.ndarray, metric: str) -> np.ndarray:
    offsets = (-0.3, -0.1, 0.0, 0.1, 0.3)
    P = np.concatenate([np.where(th <= S, 1, -1) for th in offsets], axis=1).astype(np.int8)
    order = np.argsort([abs(t) for t in offsets], kind="stable")  # ties to offset 0 first
    k = S.shape[1]
    P = np.concatenate([P[:, j * k : (j + 1) * k] for j in order], axis=1)
    return select(P, y, metric, "leader")


Rule = Callable[[np.ndarray, np.ndarray, str], np.ndarray]


def _signs(S: np.ndarray) -> np.ndarray:
    return np.where(S >= 0.0, 1, -1).astype(np.int8)


def _window(w: int) -> Rule:
    return lambda S, y, m: select(_signs(S), y, m, "window", w)


def _fixed_share(eta: float) -> Rule:
    return lambda S, y, m: _hedge(_signs(S), y, m == "cost", eta, 1e-3, False)


RULES: dict[str, Rule] = {
    "leader": lambda S, y, m: select(_signs(S), y, m, "leader"),
    **{f"window-{w}": _window(w) for w in (250, 1000, 2000)},
    **{f"fixed-share eta={e:g}": _fixed_share(e) for e in (0.3, 2.0)},
    "adanormalhedge": lambda S, y, m: _hedge(_signs(S), y, m == "cost", 0.0, 0.0, True),
    "stack acog-II": lambda S, y, m: _stack(_signs(S), y, m, False),
    "stack eta/loss auto": lambda S, y, m: _stack(_signs(S), y, m, True),
    "leader + threshold": _threshold,
}


def measure(y: np.ndarray, pred: np.ndarray, metric: str) -> float:
    pos = y == 1
    wrong = pred != y
    if metric == "sum":
        sens = 1.0 - wrong[pos].mean() if pos.any() else 1.0
        spec = 1.0 - wrong[~pos].mean() if (~pos).any() else 1.0
        return 100.0 * (ALPHA_P * sens + (1.0 - ALPHA_P) * spec)
    return 1000.0 * (C_P * wrong[pos].sum() + (1.0 - C_P) * wrong[~pos].sum()) / y.shape[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.combiners")
    p.add_argument("datasets", nargs="*")
    p.add_argument("--permutations", type=int, default=5)
    p.add_argument("--small-permutations", type=int, default=20)
    p.add_argument("--table", type=Path, default=None, help="also write the table (markdown) here")
    args = p.parse_args(argv)
    args.seed, args.positive_label = 0, None
    CACHE.mkdir(exist_ok=True)
    names = args.datasets or list(TUNING)
    table: dict[str, dict[str, dict[str, list[float]]]] = {r: {} for r in RULES}
    for name in names:
        stream = load_stream(name, args)
        for o, order in enumerate(stream.orders):
            X, y = stream.raw[order], stream.y[order]
            for metric in ("sum", "cost"):
                path = CACHE / f"{name.replace(':', '_')}-{o}-{metric}.npy"
                have = np.load(path) if path.exists() else None
                S = member_scores(X, y, stream.d, metric, have)
                if have is None or S.shape != have.shape:
                    np.save(path, S)
                for rule, fn in RULES.items():
                    pred = fn(S, y, metric)
                    table[rule].setdefault(name, {"sum": [], "cost": []})[metric].append(
                        measure(y, pred, metric)
                    )
            print(f"{name} order {o} done", file=sys.stderr, flush=True)
    base = table["leader"]
    lines = [
        f"Generated by `python -m bench.quality.combiners --permutations {args.permutations} "
        f"--small-permutations {args.small_permutations}` over the default ensemble's members (raw rows, the "
        "ensemble normalising for its members), replayed offline per combiner. Spread: the mean over data "
        "sets of the sample std over orders; *- leader*: the mean paired difference to the leader rule, "
        "and on how many data sets the rule is better.",
        "",
        "| combiner | mean sum % | spread | sum - leader | better "
        "| mean cost/1000 | spread | cost - leader | better |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rule, per in table.items():
        cells = []
        for metric in ("sum", "cost"):
            means = [np.mean(per[n][metric]) for n in per]
            spreads = [spread(np.array(per[n][metric])) for n in per]
            diffs = [np.mean(np.array(per[n][metric]) - np.array(base[n][metric])) for n in per]
            sign = 1.0 if metric == "sum" else -1.0
            better = sum(sign * dd > 1e-9 for dd in diffs)
            cells += [
                f"{np.mean(means):.2f}",
                f"{np.mean(spreads):.2f}",
                f"{np.mean(diffs):+.2f}",
                f"{better}/{len(diffs)}",
            ]
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    if args.table is not None:
        args.table.write_text("\n".join(lines) + "\n")
    for rule, per in table.items():
        print(
            rule,
            {
                n: (round(float(np.mean(v["sum"])), 2), round(float(np.mean(v["cost"])), 2))
                for n, v in per.items()
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
