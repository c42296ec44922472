"""Learner throughput: examples per second on a9a, beside river and Vowpal Wabbit, same run.

    .venv/bin/python -m bench.learners [--repeats 3] [--output docs/benchmarks.md]

Every system runs predict-then-learn over the same L2-normalised a9a stream (48,842 rows,
123 features, ~14 non-zeros a row). Ours are timed around ``Learner.run`` (input checks and
the copy into canonical CSR included); the peers around their predict-then-learn loop only,
their input conversion excluded (see ``bench/peers.py``). Best of ``--repeats`` runs.

It also times SSACOG's update as the dimension grows from 10^3 to 10^6 with the number of
non-zeros per row fixed: the per-update time must stay flat (O(m nnz + m^3), never O(d)),
and the single-call ``learn`` latency the service pays, for a9a-sized input.

SDROGD (``l = ceil(0.1 d)`` by default) and Pegasos run in the a9a table like every learner; a
third table times SDROGD against d at fixed non-zeros per row, with ``l = 0.1 d`` (cost O(l d) per
label: quadratic in d) and with ``l`` fixed (linear in d), beside Pegasos (O(nnz) per label and
O(d) per step) in the same run.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from bench.peers import run_peer
from service.datasets import l2_normalize, load
from service.learners import ALGORITHMS, create
from service.learners.errors import InvalidParameter
from service.model_config import ModelConfig

TARGETS = {  # examples per second on a9a (issue: the learning core)
    **{name: 1_000_000 for name in ("perceptron", "pa1", "paum", "cpapb", "romma", "cog", "acog-diag")},
    "ssacog": 300_000,
    "acog": 100_000,
}
PEERS = ("river-pa", "vw", "vw-ojanewton")


SPREAD: list[float] = []
"""``slowest / fastest - 1`` of every :func:`best_of` of this run: the a9a table reports the largest."""


def best_of(repeats: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    SPREAD.append(max(times) / min(times) - 1.0)
    return min(times)


def ours(name: str, X: sp.csr_matrix, y: np.ndarray, **params: Any) -> Callable[[], Any]:
    """A fresh learner's whole pass over the stream, with its compiled code already loaded."""
    create(name, n_features=X.shape[1], **params).run(X[:5], y[:5])
    return lambda: create(name, n_features=X.shape[1], **params).run(X, y)


DEFAULTS_ROW = "service defaults"
"""The a9a table's row of the model ``PUT /models`` builds with nothing set (the README quotes it)."""


def service_defaults(X: sp.csr_matrix, y: np.ndarray) -> tuple[Callable[[], Any], int]:
    """The default model's whole pass (eta and loss auto: every member learns every label), and
    its number of members."""
    config = ModelConfig(n_features=X.shape[1])
    config.build_learner().run(X[:5], y[:5])
    return lambda: config.build_learner().run(X, y), config.members


def throughput_table(repeats: int) -> list[str]:
    data = load("a9a")
    X, y = l2_normalize(data.X), data.y.astype(np.int64)
    rho = data.n_negative / data.n_positive
    n = X.shape[0]
    peer_rate = {}
    for peer in PEERS:
        peer_rate[peer] = n / min(run_peer(peer, X, y, rho=rho).seconds for _ in range(repeats))
    SPREAD.clear()
    lines = [
        f"a9a: {n} rows x {X.shape[1]}, {X.nnz / n:.1f} non-zeros per row; rho = {rho:.3f}; "
        f"best of {repeats}.",  # the spread is added below, once measured
        "",
        "| learner | examples/s | target | vs river PA | vs VW | vs VW OjaNewton |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in ALGORITHMS:
        params = {"rho": rho} if "rho" in ALGORITHMS[name].param_spec() else {}
        try:
            rate = n / best_of(repeats, ours(name, X, y, **params))
        except InvalidParameter as exc:  # quadratic takes d <= 64: not a learner for a9a
            lines.append(f"| {name} | not run: {exc} | | | | |")
            continue
        target = TARGETS.get(name)
        verdict = "" if target is None else f"{target:,} {'met' if rate >= target else 'MISSED'}"
        ratios = " | ".join(f"{rate / peer_rate[p]:.1f}x" for p in PEERS)
        lines.append(f"| {name} | {rate:,.0f} | {verdict} | {ratios} |")
    run_defaults, members = service_defaults(X, y)
    rate = n / best_of(repeats, run_defaults)
    ratios = " | ".join(f"{rate / peer_rate[p]:.1f}x" for p in PEERS)
    lines.append(f"| {DEFAULTS_ROW} ({members} members) | {rate:,.0f} | | {ratios} |")
    for peer in PEERS:
        lines.append(f"| {peer} (peer) | {peer_rate[peer]:,.0f} | | | | |")
    lines[0] = (
        lines[0].removesuffix(".")
        + f" (the slowest run of any learner within {max(SPREAD):.0%} of its best)."
    )
    return lines


def random_stream(n: int, d: int, nnz: int, seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    indices = np.sort(np.stack([rng.choice(d, nnz, replace=False) for _ in range(n)]), axis=1)
    data = rng.normal(size=(n, nnz))
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    X = sp.csr_matrix((data.ravel(), indices.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    y = np.where(rng.random(n) < 0.25, 1, -1)
    return X, y


def flatness_table(repeats: int, n: int = 30_000, nnz: int = 20) -> list[str]:
    lines = [
        f"SSACOG (m = 5) per update, {n} rows of {nnz} non-zeros, Laplace rho; the re-materialisation "
        "(O(m^2 d), every max(10^4, d/10) rounds) is included in the mean and shown apart.",
        "",
        "| d | mean us/update | of which re-materialisation | single learn() call us | state MiB |",
        "|---:|---:|---:|---:|---:|",
    ]
    for d in (10**3, 10**4, 10**5, 10**6):
        X, y = random_stream(n, d, nnz, seed=d)
        with_remat = best_of(repeats, ours("ssacog", X, y, rho="laplace")) / n
        without = best_of(repeats, ours("ssacog", X, y, rho="laplace", remat_every=10**9)) / n
        learner = create("ssacog", n_features=d, rho="laplace")
        learner.run(X[: n // 2], y[: n // 2])
        learner.learn((X[0].indices, X[0].data), 1)  # load the single-call code untimed
        rows = [(X[i].indices, X[i].data) for i in range(n // 2, n // 2 + 2000)]
        start = time.perf_counter()
        for (idx, val), label in zip(rows, y[n // 2 :], strict=False):
            learner.learn((idx, val), int(label))
        single = (time.perf_counter() - start) / len(rows)
        remat = max(with_remat - without, 0.0)
        lines.append(
            f"| {d:,} | {with_remat * 1e6:.2f} | {remat * 1e6:.2f} | {single * 1e6:.1f} | "
            f"{learner.state_nbytes() / 2**20:.1f} |"
        )
    return lines


def sdrogd_cost_table(repeats: int, n: int = 5_000, nnz: int = 20) -> list[str]:
    """SDROGD's cost per label against d (batch 60, Laplace rho), as a ratio to Pegasos at the same d."""
    lines = [
        f"SDROGD per label against d, {n} rows of {nnz} non-zeros, batch 60, Laplace rho; best of "
        f"{repeats}. Pegasos (lam = 1) is the baseline of each row. Each label costs O(nnz), each shrink "
        "one SVD of the 2l x d sketch (O(l^2 d), every l or more labels) and each step O(l d): with "
        "l = 0.1 d the cost grows as d^2, with l fixed as d (an SVD per l labels: no O(nnz) path as "
        "SSACOG has).",
        "",
        "| d | l | SDROGD us/label | Pegasos us/label | SDROGD / Pegasos | single learn() us | state MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    cases = [(d, 0.1) for d in (100, 300, 1_000)] + [(d, 8 / d) for d in (10**3, 10**4, 10**5)]
    for d, fraction in cases:
        X, y = random_stream(n, d, nnz, seed=d)
        params = {"rho": "laplace", "sketch_fraction": fraction, "memory_budget": 2**34}
        sdrogd = best_of(repeats, ours("sdrogd", X, y, **params)) / n
        pegasos = best_of(repeats, ours("pegasos", X, y, rho="laplace")) / n
        learner = create("sdrogd", n_features=d, **params)
        learner.run(X[: n // 2], y[: n // 2])
        learner.learn((X[0].indices, X[0].data), 1)  # load the single-call code untimed
        rows = [(X[i].indices, X[i].data) for i in range(n // 2, n // 2 + 1000)]
        start = time.perf_counter()
        for (idx, val), label in zip(rows, y[n // 2 :], strict=False):
            learner.learn((idx, val), int(label))
        single = (time.perf_counter() - start) / len(rows)
        ell = learner.describe()["sketch"]["size"]
        lines.append(
            f"| {d:,} | {ell:,} | {sdrogd * 1e6:.2f} | {pegasos * 1e6:.2f} | "
            f"{sdrogd / pegasos:.1f}x | {single * 1e6:.1f} | {learner.state_nbytes() / 2**20:.1f} |"
        )
    return lines


def one_blas_thread(table: Callable[[int], list[str]], repeats: int) -> list[str]:
    """``table(repeats)`` with BLAS on one thread (SDROGD's SVDs are small: a second OpenBLAS thread
    mostly spins on a shared machine), and a line that says so."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        lines = table(repeats)
    return [lines[0] + " BLAS on one thread.", *lines[1:]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=None, help="write the section into this markdown file")
    args = parser.parse_args(argv)
    header = [
        "## Learner throughput (`python -m bench.learners`)",
        "",
        f"Machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
        f"numpy {np.__version__}; command: `{' '.join(['python -m bench.learners', *sys.argv[1:]])}`",
        "",
    ]
    text = "\n".join(
        [
            *header,
            *throughput_table(args.repeats),
            "",
            *flatness_table(args.repeats),
            "",
            *one_blas_thread(sdrogd_cost_table, args.repeats),
        ]
    )
    print(text)
    if args.output:
        from bench.report import write_section

        write_section(args.output, "learners", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
