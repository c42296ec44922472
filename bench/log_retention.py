"""Redis memory per retained label-log entry, what ``ACOG_LOG_RETAIN_ENTRIES`` costs.

    .venv/bin/python -m bench.log_retention [--redis-url redis://127.0.0.1:6379/15] [--entries 10000]
                                            [--repeats 3] [--output docs/benchmarks.md]

For each feature shape, a fresh model in the given Redis database gets ``entries`` labels through
the service's own path (``put_pending`` of a scored prediction, then ``label``: the entry holds the
encoded example, the prediction id, the labels and the times) and, as the other path,
``append_examples`` (labelled examples never predicted). ``MEMORY USAGE`` of the log stream
(``SAMPLES 0``: every node counted) divided by its length is the cost of one retained entry (the
empty stream's own few hundred bytes are shared by all of them). The figure does not depend on the model's
algorithm (the log holds examples, not state). Each repeat uses a new model; the table gives the
median and the range over repeats. The model's keys are deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import secrets
import shlex
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np
import redis

from bench.report import cpu_model, write_section
from model_store import Example, PendingPrediction, RedisModelStore, make_prediction_id, parse_prediction_id
from model_store.keys import GenerationKeys

SECTION = "log-retention"
SHAPES: dict[str, tuple[str, int, int]] = {
    "dense d = 10": ("dense", 10, 10),
    "dense d = 100": ("dense", 100, 100),
    "sparse, 20 of 10^5": ("sparse", 100_000, 20),
    "named, 10 names": ("named", 10, 10),
}
BATCH = 500


def examples(kind: str, dimension: int, nnz: int, n: int, seed: int) -> list[Example]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        values = rng.standard_normal(nnz)
        if kind == "dense":
            out.append(Example(values, indices=np.arange(dimension, dtype=np.int64)))
        elif kind == "sparse":
            indices = np.sort(rng.choice(dimension, size=nnz, replace=False)).astype(np.int64)
            out.append(Example(values, indices=indices))
        else:
            out.append(Example(values, names=tuple(f"feature_{j}" for j in range(nnz))))
    return out


async def measure(url: str, shape: str, n: int, seed: int, path: str) -> float:
    """Bytes per log entry of ``n`` entries of ``shape`` through ``path`` (labels or examples)."""
    kind, dimension, nnz = SHAPES[shape]
    store = RedisModelStore.from_url(url)
    client = redis.Redis.from_url(url)
    name = f"bench-retention-{secrets.token_hex(4)}"
    try:
        record = await store.put_model(name, {"n_features": dimension}, time.time(), None)
        generation = record.generation
        log_key = GenerationKeys(name, generation).log
        rows = examples(kind, dimension, nnz, n, seed)
        for start in range(0, n, BATCH):
            part = rows[start : start + BATCH]
            now = time.time()
            if path == "examples":
                await store.append_examples(name, generation, [(x, 1) for x in part], now)
                continue
            pending = [
                PendingPrediction(make_prediction_id(name, generation, now), x, -1, -0.25, now) for x in part
            ]
            await store.put_pending(name, generation, pending, 3600.0)
            labels = [(parse_prediction_id(p.prediction_id), 1) for p in pending]
            await store.label(name, generation, labels, now, 3600.0, 3600.0)
        length = int(client.xlen(log_key))
        usage = int(client.memory_usage(log_key, samples=0) or 0)
        assert length == n, (length, n)
        return usage / length
    finally:
        await store.delete_model(name)
        for key in client.scan_iter(match=f"*{name}*"):
            client.delete(key)
        client.close()
        await store.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--redis-url", default=os.environ.get("ACOG_TEST_REDIS_URL", "redis://127.0.0.1:6379/15"))
    p.add_argument("--entries", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--output", default=None)
    args = p.parse_args(argv)
    rows = []
    for shape in SHAPES:
        cells = []
        for path in ("labels", "examples"):
            figures = [
                asyncio.run(measure(args.redis_url, shape, args.entries, seed, path))
                for seed in range(args.repeats)
            ]
            cells.append(f"{statistics.median(figures):,.0f} ({min(figures):,.0f} to {max(figures):,.0f})")
            print(f"{shape}, {path}: {figures}", file=sys.stderr)
        per_label = float(cells[0].split(" ")[0].replace(",", ""))
        rows.append(f"| {shape} | {cells[0]} | {cells[1]} | {per_label * 100_000 / 2**20:,.1f} |")
    server = redis.Redis.from_url(args.redis_url).info("server")["redis_version"]
    command = ".venv/bin/python -m bench.log_retention " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    text = "\n".join(
        [
            "## Log retention: Redis memory per retained entry (`python -m bench.log_retention`)",
            "",
            f"Command: `{command.strip()}`. Machine: {cpu_model(platform.processor())}, {os.cpu_count()} "
            f"cores, Redis {server}. {args.entries:,} entries per model, written in batches of {BATCH}; "
            "`MEMORY USAGE` of the log stream (every node sampled) over its length, median over "
            f"{args.repeats} models (min to max). `labels`: scored predictions then labelled (the entry "
            "holds the prediction id and both times); `examples`: labelled examples posted without a "
            "prediction. Retaining N entries with `ACOG_LOG_RETAIN_ENTRIES=N` costs about N times the "
            "figure, per model, on top of the entries the retained checkpoints already keep.",
            "",
            "| features | bytes / entry: labels | bytes / entry: examples | MiB per 100,000 labels |",
            "|---|---:|---:|---:|",
            *rows,
        ]
    )
    print(text)
    if args.output:
        write_section(args.output, SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
