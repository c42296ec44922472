"""Extras: the runs the "Misses explained" sections quote (other permutation seeds, other readings of
the data, australian's raw features, the 141,691-row ijcnn1, random sketch directions, a rho sweep for
CPA-PB, ...)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp

from bench.reproduction.plans import GRID, SEED, SUM_RHO_GERMAN, Job, Plan, common_args
from bench.reproduction.runs import best_params, dataset, run_job, run_stream
from research.protocols import online as ev
from service.datasets import Dataset


def algorithm_of(label: str) -> str:
    """``"ACOG-IIdiag"`` -> ``"acog-diag"`` (the registry name)."""
    for variant in [*ev.PAPER_TABLE, *ev.SKETCHES]:
        if variant.label == label:
            return variant.algorithm
    raise KeyError(label)


def seed_spread(
    plan: Plan, result: dict[str, Any], permutations: int, seeds: Iterable[int]
) -> dict[str, Any]:
    """Each protocol row re-run, at its picked setting, on other seeds' permutations."""
    data = dataset(plan.dataset)
    out: dict[str, Any] = {}
    for block in ("sum", "cost"):
        for job in result["jobs"]:
            if job["block"] != block:
                continue
            for row in job["rows"]:
                params = row["best"]["params"]
                key = f"{block}:{row['algorithm']}"
                out[key] = {
                    str(seed): run_stream(
                        data,
                        algorithm_of(row["algorithm"]),
                        params,
                        ev.permutations(data, permutations, seed),
                    )
                    for seed in seeds
                }
    return out


def random_directions(seed: int) -> Callable[[Any, int], None]:
    """``prepare`` hook: SSACOG's initial sketch directions = a random orthonormal m x d frame."""

    def prepare(learner: Any, i: int) -> None:
        state = learner.to_state()
        d, m = state["ZT"].shape
        q, _ = np.linalg.qr(np.random.default_rng(seed * 1000 + i).standard_normal((d, m)))
        state["ZT"] = np.ascontiguousarray(q)
        learner.load_state(state)

    return prepare


FINE_GRID = ",".join(f"{10 ** (k / 4):.3g}" for k in range(-8, 13))
"""eta = 10^(k/4), 0.01 .. 1000: four values per decade, to look between the paper's grid points."""


def extra_jobs(plan: Plan, permutations: int) -> dict[str, Job]:
    """Further ``acog evaluate`` runs quoted by the explanations, per data set."""
    base = common_args(plan, permutations)
    jobs: dict[str, Job] = {}
    if plan.dataset == "german":
        for name, rho in (("rounded", "2.333"), ("exact", SUM_RHO_GERMAN)):
            jobs[f"acog2-rho-{name}"] = Job(
                "sum", (*base, "--algorithms", "acog-II", "--metric", "sum", "--rho", rho)
            )
    if plan.dataset in ("a9a", "ijcnn1"):
        sum_rho = {"a9a": 37155 / 11687, "ijcnn1": 45137 / 4853}[plan.dataset]
        jobs["paum-cost-sum-rho"] = Job(
            "cost", (*base, "--algorithms", "paum", "--metric", "cost", "--rho", repr(sum_rho))
        )
        for metric in ("sum", "cost"):
            jobs[f"fine-{metric}"] = Job(
                metric, (*base, "--algorithms", "cog,acog,acog-diag", "--metric", metric, "--eta", FINE_GRID)
            )
    if plan.dataset == "ijcnn1":
        jobs["full-sum"] = Job(
            "sum", ("ijcnn1-full", *base[1:], "--algorithms", "paper", "--metric", "sum", *GRID)
        )
    if plan.dataset == "a9a":
        jobs["train-sum"] = Job(
            "sum", ("a9a-train", *base[1:], "--algorithms", "paper", "--metric", "sum", *GRID)
        )
    return jobs


AUSTRALIAN_RANGES = (
    (0, 1), (13.75, 80.25), (0, 28), (1, 3), (1, 14), (1, 9), (0, 28.5),
    (0, 1), (0, 1), (0, 67), (0, 1), (1, 3), (0, 2000), (1, 100001),
)  # fmt: skip
"""Column ranges of the raw Statlog australian data: australian_scale is svm-scale's min-max map of
each column onto [-1, 1], so ``raw = lo + (x + 1) (hi - lo) / 2`` inverts it."""
AUSTRALIAN_RAW_ROWS = {
    0: (1, 22.08, 11.46, 2, 4, 4, 1.585, 0, 0, 0, 1, 2, 100, 1213),
    1: (0, 22.67, 7, 2, 8, 4, 0.165, 0, 0, 0, 0, 2, 160, 1),
    689: (1, 41, 0.04, 2, 10, 4, 0.04, 0, 1, 1, 0, 1, 560, 1),
}
"""Three rows of the raw Statlog file (``australian.dat``, first, second, last), to check the inversion."""


def australian_raw() -> Dataset:
    """The unscaled australian features (as LIBSVM's ``australian``), rebuilt from australian_scale."""
    scaled = dataset("australian")
    lo, hi = np.array(AUSTRALIAN_RANGES, dtype=np.float64).T
    raw = lo + (scaled.X.toarray() + 1.0) * (hi - lo) / 2.0
    for i, row in AUSTRALIAN_RAW_ROWS.items():
        if not np.allclose(raw[i], row, atol=2e-3):
            raise AssertionError(f"australian row {i}: rebuilt {raw[i]} != Statlog {row}")
    X = sp.csr_matrix(raw)
    X.eliminate_zeros()
    return Dataset("australian-raw", X, scaled.y, None, "australian_scale with svm-scale inverted")


VARIANTS: dict[str, dict[str, Callable[[], Dataset]]] = {
    "mushrooms": {"label 2 (edible) as +1": lambda: dataset("mushrooms", positive_label=2.0)},
    "dna": {
        "class 2 as +1": lambda: dataset("dna", positive_label=2.0),
        "class 3 as +1": lambda: dataset("dna", positive_label=3.0),
    },
    "australian": {"raw (unscaled) features": australian_raw},
}
"""Other readings of a data set tried against the paper: another positive class (the registry maps
mushrooms label 1 and dna class 1 to +1; usps digit 0 is pinned by the paper's 1:5.11, which no other
digit gives) or, for australian, the unscaled features that german's own data (raw, in german.mat)
suggests the paper used."""


def data_variants(plan: Plan, permutations: int) -> dict[str, Any]:
    """The protocol's sum (and cost) rows on other readings of the data set. No CLI form (the registry
    fixes the files and the label mapping), so these call :func:`research.protocols.online.evaluate` directly
    with the protocol's grid."""
    out: dict[str, Any] = {}
    grid = tuple(10.0**k for k in range(-5, 6))
    for name, build in VARIANTS.get(plan.dataset, {}).items():
        data = build()
        orders = ev.permutations(data, permutations, SEED)
        rows = [
            {"algorithm": v.label, "metric": metric, "best": best.summary()}
            for metric in (("sum", "cost") if plan.cost else ("sum",))
            for v, _, best, _ in ev.evaluate(
                data,
                ev.parse_variants(plan.algorithms),
                [metric],
                ev.OnlineProtocol(eta=grid, C=grid, r=grid),
                orders,
            )
        ]
        out[name] = {"positives": data.n_positive, "negatives": data.n_negative, "rows": rows}
    return out


def run_extras(plan: Plan, result: dict[str, Any], permutations: int) -> dict[str, Any]:
    """Every extra run of one data set (see the module docstring)."""
    extras: dict[str, Any] = {"jobs": {}}
    for name, job in extra_jobs(plan, permutations).items():
        print(f"[{plan.dataset}] extra {job.command}", file=sys.stderr, flush=True)
        extras["jobs"][name] = run_job(job)
    if not plan.own_permutations:
        extras["seeds"] = seed_spread(plan, result, permutations, range(1, 5))
    if plan.dataset == "german":
        data = dataset("german")
        orders = ev.permutations(data, permutations, None)
        rhos = np.exp(np.linspace(np.log(0.5), np.log(200.0), 61))
        params = {"fit_intercept": False, "alpha_p": 0.5}
        extras["cpapb-rho-sweep"] = [
            {"rho": float(r), **run_stream(data, "cpapb", {**params, "rho": float(r)}, orders)} for r in rhos
        ]
    if "ssacog" in plan.algorithms:
        data = dataset(plan.dataset)
        orders = ev.permutations(data, permutations, SEED)
        directions: dict[str, Any] = {}
        for block in ("sum", "cost") if plan.cost else ("sum",):
            for loss in ("I", "II"):
                params = best_params(result, block, f"SSACOG-{loss}")
                directions[f"{block}:SSACOG-{loss}:random"] = [
                    run_stream(data, "ssacog", params, orders, random_directions(s)) for s in range(3)
                ]
                for m in (10, 20):
                    directions[f"{block}:SSACOG-{loss}:m={m}"] = run_stream(
                        data, "ssacog", {**params, "sketch_size": m}, orders
                    )
        extras["ssacog"] = directions
    extras["variants"] = data_variants(plan, permutations)
    return extras
