"""The combiner study: how the default ensemble should turn its members into one prediction.

    .venv/bin/python -m bench.quality.combiners [--permutations 5] [--small-permutations 20] [--positives S]

Tuning set only (:data:`bench.quality.protocol.TUNING`; with ``--positives``, each of its data sets
with the positives subsampled to that share of the rows, as :mod:`bench.quality.imbalance` runs it).
The members of the default ensemble (``ModelConfig(n_features=d, objective=...)``, what a client
gets) are independent learners, so they run once per order and measure (on the raw rows, the
ensemble normalising for its members), and every combiner is replayed offline from their online
scores:

- ``leader``: the member with the best objective since the start (``selection="leader"``; it replays
  :class:`service.learners.EtaGrid` exactly);
- ``window-W``: the same over the last ``W`` labels;
- ``fixed-share``: exponential weights over each member's class-balanced loss (a mistake on class
  ``y`` costs ``1 - p_y``, ``p_y`` the Laplace share of ``y`` so far, for sum; ``c_y`` for cost),
  rate ``eta``, share ``alpha`` toward a prior ``pi`` that is also the initial weights (Herbster &
  Warmuth 1998): ``w_k <- (1 - alpha) w_k exp(-eta l_k) / Z + alpha pi_k``; a weighted vote of the
  members' predictions (or of their margins clipped to [-1, 1]). The prior is uniform (``1/K``), or
  balanced over the roster's groups (:meth:`Roster.prior`); a variant drops the linear family's
  loss-I members;
- ``adanormalhedge``: the parameter-free AdaNormalHedge (Luo & Schapire 2015) over the same losses,
  its weights times the prior;
- ``meta-rate``: Fixed-Share (rate ``eta_m``, share 0.001, uniform prior) over the votes of
  Fixed-Share at several rates (group prior), each vote a +-1 expert: the rate chosen online, per
  stream, instead of once on the tuning set;
- ``calibrated mixture``: each member's score mapped to ``P_k(+|x) = sigmoid(a_k s_k + b_k)`` by its
  own online Platt scaling (logistic regression on ``(s_k, 1)`` by online Newton steps, ``a = 1``,
  ``b = 0`` and the Hessian ``I`` at the start), Fixed-Share over the members' log-losses (rate 1 is
  the Bayes mixture), and the mixture ``P(+|x) = sum_k w_k P_k(+|x)`` thresholded at the cost-optimal
  threshold (``c_n / (c_p + c_n)`` for cost; the running Laplace prior of positives for sum);
- ``stack``: ACOG-II (intercept, the objective's rho) over the members' predictions ``p / sqrt(K)``;
- ``threshold``: the leader over members *and* decision offsets ``theta`` on their scores;
- ``fixed-share ..., hinge loss`` and ``..., vote threshold``: the vote with each member's loss the
  class-weighted hinge ``(1 - y v) / 2`` of its vote, and the vote's own decision threshold chosen
  online by the leader rule among :data:`THRESHOLDS`.

Every rule prints its mean sum % and cost per 1000 over the tuning data sets, the spread over orders
(the mean over data sets of the sample std over orders) and the mean paired difference to the
earlier vote (:data:`BASE`); :data:`CHOSEN` is the service's (:mod:`service.learners.hedge`, which the
replay reproduces bit for bit).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np

from bench.quality.compare import spread
from bench.quality.protocol import ALPHA_P, C_P, COST_RHO, TUNING, load_stream, with_positive_share
from bench.quality.selection import select
from service.jit_cache import source_digest
from service.learners import create, hedge
from service.learners.hedge import group_prior
from service.model_config import ModelConfig

CACHE = Path("/tmp/acog-combiners") / source_digest()
"""The members' scores, per data set, order and measure: under the digest of the kernel sources, so
that a change to a learner or to the members' inputs never replays the scores of the code before it."""


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
def _hedge(
    P: np.ndarray, V: np.ndarray, y: np.ndarray, cost: bool, eta: float, alpha: float, ada: bool,
    prior: np.ndarray, hinge: bool, thetas: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Fixed-Share (or AdaNormalHedge with ``ada``) over the members' predictions ``P`` (+-1), voting
    with ``V`` (``P`` itself, or the members' clipped margins); ``prior``: the initial weights and the
    share vector (sums to 1). A member's loss is its class-weighted mistake, or with ``hinge`` the
    class-weighted ``(1 - y v) / 2`` of its vote ``v`` in [-1, 1]. Returns ``(n, len(thetas))``: the
    prediction ``vote >= theta`` for each decision threshold."""
    n, k = P.shape
    logw = np.log(prior)
    R = np.zeros(k)
    C = np.zeros(k)
    out = np.empty((n, thetas.shape[0]), dtype=np.int8)
    pos = 0
    for t in range(n):
        if ada:
            w = np.zeros(k)
            for j in range(k):
                a = max(R[j] + 1.0, 0.0) ** 2 / (3.0 * (C[j] + 1.0))
                b = max(R[j] - 1.0, 0.0) ** 2 / (3.0 * (C[j] + 1.0))
                w[j] = prior[j] * (math.exp(min(a, 700.0)) - math.exp(min(b, 700.0))) / 2.0
            if w.sum() <= 0.0:
                w[:] = prior
        else:
            w = np.exp(logw - logw.max())
        w = w / w.sum()
        vote = 0.0
        for j in range(k):
            vote += w[j] * V[t, j]
        for q in range(thetas.shape[0]):
            out[t, q] = 1 if vote >= thetas[q] else -1
        if cost:
            c = C_P if y[t] == 1 else 1.0 - C_P
        else:
            p_y = ((pos + 1.0) if y[t] == 1 else (t - pos + 1.0)) / (t + 2.0)
            c = 1.0 - p_y
        loss = c * (1.0 - y[t] * V[t]) / 2.0 if hinge else np.where(P[t] != y[t], c, 0.0)
        if ada:
            mean = (w * loss).sum()
            r = mean - loss
            R += r
            C += np.abs(r)
        else:
            logw -= eta * loss
            lw = np.exp(logw - logw.max())
            lw = (1.0 - alpha) * lw / lw.sum() + alpha * prior
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


@dataclass(frozen=True)
class Roster:
    """Who the members are: each one's family (learner), input form and loss, in member order."""

    algorithms: tuple[str, ...]
    forms: tuple[str, ...]
    losses: tuple[str | None, ...]

    def prior(self, kind: str) -> np.ndarray:
        """``"uniform"``: ``1/K``; ``"group"``: every (family, input form) group the same mass, split
        evenly inside; ``"family"``: every family the same mass, split evenly inside."""
        k = len(self.algorithms)
        if kind == "uniform":
            return np.full(k, 1.0 / k)
        if kind == "family":
            return group_prior(self.algorithms)
        return group_prior(list(zip(self.algorithms, self.forms, strict=True)))  # the service's prior


Rule = Callable[[np.ndarray, np.ndarray, str, Roster], np.ndarray]


def _signs(S: np.ndarray) -> np.ndarray:
    return np.where(S >= 0.0, 1, -1).astype(np.int8)


def _window(w: int) -> Rule:
    return lambda S, y, m, r: select(_signs(S), y, m, "window", w)


THRESHOLDS = hedge.THRESHOLDS
"""Decision thresholds on the vote for the online threshold (0 first: ties go to the plain vote)."""


def _fixed_share(
    eta: float, alpha: float = 1e-3, prior: str = "uniform", margin: bool = False, hinge: bool = False,
    threshold: bool = False,
) -> Rule:  # fmt: skip
    """``threshold``: predict ``vote >= theta`` with the ``theta`` of :data:`THRESHOLDS` whose
    objective over the labels so far is best (the leader rule over the thresholds)."""

    def rule(S: np.ndarray, y: np.ndarray, m: str, r: Roster) -> np.ndarray:
        P = _signs(S)
        V = np.clip(S, -1.0, 1.0) if margin else P.astype(np.float64)
        thetas = THRESHOLDS if threshold else THRESHOLDS[:1]
        out = _hedge(P, V, y, m == "cost", eta, alpha, False, r.prior(prior), hinge, thetas)
        return select(out, y, m, "leader") if threshold else out[:, 0]

    return rule


def _ada(prior: str) -> Rule:
    def rule(S: np.ndarray, y: np.ndarray, m: str, r: Roster) -> np.ndarray:
        P = _signs(S)
        V = P.astype(np.float64)
        return _hedge(P, V, y, m == "cost", 0.0, 0.0, True, r.prior(prior), False, THRESHOLDS[:1])[:, 0]

    return rule


@numba.njit(cache=False)
def _calibrated_mixture(
    S: np.ndarray, y: np.ndarray, cost: bool, prior: np.ndarray, eta: float, alpha: float
) -> np.ndarray:
    """The ``calibrated mixture`` rule (see the module docstring): ``(n,)`` predictions +-1."""
    n, k = S.shape
    a, b = np.ones(k), np.zeros(k)
    h00, h01, h11 = np.ones(k), np.zeros(k), np.ones(k)  # each member's 2 x 2 Hessian, from I
    logw = np.log(prior)
    out = np.empty(n, dtype=np.int8)
    p = np.empty(k)
    pos = 0
    for t in range(n):
        for j in range(k):
            p[j] = 1.0 / (1.0 + math.exp(-min(max(a[j] * S[t, j] + b[j], -30.0), 30.0)))
        w = np.exp(logw - logw.max())
        mix = (w * p).sum() / w.sum()
        threshold = 1.0 - C_P if cost else (pos + 1.0) / (t + 2.0)
        out[t] = 1 if mix >= threshold else -1
        target = 1.0 if y[t] == 1 else 0.0
        for j in range(k):
            q = min(max(p[j], 1e-12), 1.0 - 1e-12)
            logw[j] -= eta * (-math.log(q) if target == 1.0 else -math.log(1.0 - q))
            s, g = S[t, j], p[j] - target  # the logistic loss's gradient is g (s, 1)
            c = p[j] * (1.0 - p[j])
            h00[j] += c * s * s
            h01[j] += c * s
            h11[j] += c
            det = h00[j] * h11[j] - h01[j] * h01[j]
            a[j] -= (h11[j] * g * s - h01[j] * g) / det
            b[j] -= (h00[j] * g - h01[j] * g * s) / det
        lw = np.exp(logw - logw.max())
        logw = np.log((1.0 - alpha) * lw / lw.sum() + alpha * prior)
        if y[t] == 1:
            pos += 1
    return out


def _calibrated(eta: float, alpha: float = 1e-3) -> Rule:
    return lambda S, y, m, r: _calibrated_mixture(
        np.ascontiguousarray(S), y, m == "cost", r.prior("group"), eta, alpha
    )


def _meta_rate(rates: tuple[float, ...], eta_m: float) -> Rule:
    def rule(S: np.ndarray, y: np.ndarray, m: str, r: Roster) -> np.ndarray:
        P = _signs(S)
        votes = np.stack(
            [_hedge(P, P.astype(np.float64), y, m == "cost", e, 1e-3, False, r.prior("group"), False,
                    THRESHOLDS[:1])[:, 0] for e in rates],
            axis=1,
        )  # fmt: skip
        uniform = np.full(len(rates), 1.0 / len(rates))
        V = votes.astype(np.float64)
        return _hedge(votes, V, y, m == "cost", eta_m, 1e-3, False, uniform, False, THRESHOLDS[:1])[:, 0]

    return rule


def _without_linear_loss_i(inner: Rule) -> Rule:
    """``inner`` over the members without the linear family's loss-I half (fewer linear members)."""

    def rule(S: np.ndarray, y: np.ndarray, m: str, r: Roster) -> np.ndarray:
        keep = [j for j, (a, loss) in enumerate(zip(r.algorithms, r.losses, strict=True))
                if not (a == r.algorithms[0] and loss == "I")]  # fmt: skip
        sub = Roster(
            tuple(r.algorithms[j] for j in keep),
            tuple(r.forms[j] for j in keep),
            tuple(r.losses[j] for j in keep),
        )
        return inner(np.ascontiguousarray(S[:, keep]), y, m, sub)

    return rule


BASE = "fixed-share eta=0.3 a=0.001 uniform"
"""The vote before this study (rate 0.3, uniform prior); the paired differences are against it."""
CHOSEN = "fixed-share eta=0.1 a=0.001 group, margin vote, vote threshold"
"""The service's vote (:data:`service.learners.hedge.ETA`, ``ALPHA``, :func:`group_prior`, the
margins and :data:`service.learners.hedge.THRESHOLDS`)."""
RULES: dict[str, Rule] = {
    "leader": lambda S, y, m, r: select(_signs(S), y, m, "leader"),
    **{f"window-{w}": _window(w) for w in (250, 1000, 2000)},
    **{
        f"fixed-share eta={e:g} a={a:g} {prior}": _fixed_share(e, a, prior)
        for prior in ("uniform", "group", "family")
        for a in (1e-3, 1e-2)
        for e in (0.1, 0.3, 1.0, 3.0)
    },
    **{
        f"fixed-share eta=0.3 a=0.03 {prior}": _fixed_share(0.3, 0.03, prior)
        for prior in ("uniform", "group")
    },
    **{f"fixed-share eta={e:g} a=0.001 group": _fixed_share(e, 1e-3, "group") for e in (0.03, 0.05)},
    "fixed-share eta=0.1 a=0.0001 group": _fixed_share(0.1, 1e-4, "group"),
    "fixed-share eta=0.1 a=0.003 group": _fixed_share(0.1, 3e-3, "group"),
    "fixed-share eta=0.3 a=0.001 group, margin vote": _fixed_share(0.3, 1e-3, "group", True),
    "fixed-share eta=1 a=0.001 group, margin vote": _fixed_share(1.0, 1e-3, "group", True),
    "fixed-share eta=0.3 a=0.01 group, margin vote": _fixed_share(0.3, 1e-2, "group", True),
    "fixed-share eta=0.3 a=0.001 uniform, no linear loss I": _without_linear_loss_i(_fixed_share(0.3)),
    "fixed-share eta=1 a=0.001 group, no linear loss I": _without_linear_loss_i(
        _fixed_share(1.0, 1e-3, "group")
    ),
    "fixed-share eta=0.1 a=0.001 group, vote threshold": _fixed_share(0.1, 1e-3, "group", threshold=True),
    "fixed-share eta=0.1 a=0.001 group, margin vote, vote threshold": _fixed_share(
        0.1, 1e-3, "group", True, threshold=True
    ),
    "fixed-share eta=0.1 a=0.001 group, hinge loss, margin vote": _fixed_share(
        0.1, 1e-3, "group", True, True
    ),
    "fixed-share eta=0.1 a=0.001 group, hinge loss, margin vote, vote threshold": _fixed_share(
        0.1, 1e-3, "group", True, True, True
    ),
    "meta-rate {0.1, 0.3, 1, 3} group, eta_m=0.3": _meta_rate((0.1, 0.3, 1.0, 3.0), 0.3),
    "meta-rate {0.1, 0.3, 1, 3} group, eta_m=1": _meta_rate((0.1, 0.3, 1.0, 3.0), 1.0),
    "meta-rate {0.1, 1} group, eta_m=0.3": _meta_rate((0.1, 1.0), 0.3),
    "calibrated mixture eta=1 (Bayes) a=0.001 group": _calibrated(1.0),
    "calibrated mixture eta=1 (Bayes) a=0.01 group": _calibrated(1.0, 1e-2),
    "calibrated mixture eta=0.2 a=0.001 group": _calibrated(0.2),
    "adanormalhedge uniform": _ada("uniform"),
    "adanormalhedge group": _ada("group"),
    "stack acog-II": lambda S, y, m, r: _stack(_signs(S), y, m, False),
    "stack eta/loss auto": lambda S, y, m, r: _stack(_signs(S), y, m, True),
    "leader + threshold": lambda S, y, m, r: _threshold(S, y, m),
}


def roster(d: int) -> Roster:
    """The default ensemble's members at dimension ``d`` (built, not run)."""
    learner: Any = ModelConfig(n_features=d).build_learner()
    return Roster(
        tuple(learner.member_algorithms), tuple(learner.member_forms), tuple(c[0] for c in learner.configs)
    )


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
    p.add_argument(
        "--positives", type=float, default=None, help="subsample each data set's positives to this share"
    )
    args = p.parse_args(argv)
    args.seed, args.positive_label = 0, None
    CACHE.mkdir(parents=True, exist_ok=True)
    names = args.datasets or list(TUNING)
    suffix = "" if args.positives is None else f"-p{args.positives:g}"  # of the member caches
    table: dict[str, dict[str, dict[str, list[float]]]] = {r: {} for r in RULES}
    roster_of: dict[str, Roster] = {}
    for name in names:
        stream = load_stream(name, args)
        if args.positives is not None:
            stream = with_positive_share(stream, args.positives)
        members = roster_of[name] = roster(stream.d)
        for o, order in enumerate(stream.orders):
            X, y = stream.raw[order], stream.y[order]
            for metric in ("sum", "cost"):
                path = CACHE / f"{name.replace(':', '_')}{suffix}-{o}-{metric}.npy"
                have = np.load(path) if path.exists() else None
                S = member_scores(X, y, stream.d, metric, have)
                if have is None or S.shape != have.shape:
                    np.save(path, S)
                for rule, fn in RULES.items():
                    pred = fn(S, y, metric, members)
                    table[rule].setdefault(name, {"sum": [], "cost": []})[metric].append(
                        measure(y, pred, metric)
                    )
            print(f"{name} order {o} done", file=sys.stderr, flush=True)
    base = table[BASE]
    mixed = [n for n in names if len(set(roster_of[n].algorithms)) > 1]
    option, subsampled = "", ""
    if args.positives is not None:
        option = f" --positives {args.positives:g}"
        share = f"{100 * args.positives:g} %"
        subsampled = f"Each data set's positives subsampled (seeded) to {share} of its rows. "
    lines = [
        f"Generated by `python -m bench.quality.combiners --permutations {args.permutations} "
        f"--small-permutations {args.small_permutations}{option}` over the default ensemble's members (raw "
        f"rows, the ensemble normalising for its members), replayed offline per combiner. {subsampled}"
        "Spread: the mean over data "
        "sets of the sample std over orders; *- before*: the mean paired difference (same orders) to "
        f"the earlier vote (`{BASE}`) ± the mean over data sets of its sample std over orders, and on how "
        "many data sets the rule is better; *mixed*: the mean sum over the data sets whose default runs more "
        f"than one family ({', '.join(mixed)}; the others run the linear family alone, where every prior "
        "is uniform). `a`: the share alpha; `uniform`: prior 1/K; `group`: every (family, input form) the "
        "same mass, split evenly inside; `family`: every family the same mass; *margin vote*: the members "
        "vote with their scores clipped to [-1, 1]; *hinge loss*: a member's loss is the class-weighted "
        "(1 - y v) / 2 of its clipped score v instead of its class-weighted mistake (with sign votes the "
        "two are the same); *vote threshold*: predict vote >= theta, theta in {-0.4, -0.2, -0.1, 0, "
        "0.1, 0.2, 0.4} chosen online by the leader rule on the objective; *no linear loss I*: without the "
        "linear family's loss-I members.",
        "",
        "| combiner | mean sum % | spread | sum - before | better | mixed sum % "
        "| mean cost/1000 | spread | cost - before | better |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rule, per in table.items():
        cells = []
        for metric in ("sum", "cost"):
            means = [np.mean(per[n][metric]) for n in per]
            spreads = [spread(np.array(per[n][metric])) for n in per]
            paired = [np.array(per[n][metric]) - np.array(base[n][metric]) for n in per]
            diffs = [float(np.mean(p)) for p in paired]
            sign = 1.0 if metric == "sum" else -1.0
            better = sum(sign * dd > 1e-9 for dd in diffs)
            cells += [
                f"{np.mean(means):.2f}",
                f"{np.mean(spreads):.2f}",
                f"{np.mean(diffs):+.2f} ± {np.mean([spread(p) for p in paired]):.2f}",
                f"{better}/{len(diffs)}",
            ]
            if metric == "sum":
                cells.append(f"{np.mean([np.mean(per[n]['sum']) for n in mixed]):.2f}" if mixed else "—")
        name = f"**{rule} (the default)**" if rule == CHOSEN else rule
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
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
