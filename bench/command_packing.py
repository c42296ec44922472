"""Redis command packing on the hot paths: hiredis's packer against redis-py's asyncio packer.

    .venv/bin/python -m bench.command_packing [--items 20] [--calls 2000] [--repeats 5]
        [--output docs/benchmarks.md]

The command is the store's own pending write (``RedisModelStore.put_pending``: one script call
carrying ``--items`` predictions of a9a's 123 features, as dense examples, the service
benchmark's model). Two rows per connection class, alternating in every repeat in one process:

- *pack*: the CPU time of packing that command's arguments (``pack_command``), the arguments
  captured from a real call;
- *put_pending*: the whole call against a private redis-server (append-only, everysec), wall time.

Baseline: redis-py's ``redis.asyncio.Connection``; candidate: the store's connection
(:func:`model_store.connection.packed_by_hiredis`). Median of the repeats (min to max), and the
candidate's time as a fraction of the baseline's within each repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import redis.asyncio as aioredis

from bench.report import publish, spread
from model_store import Example, PendingPrediction, RedisModelStore, make_prediction_id
from model_store.connection import connect, packed_by_hiredis
from service.datasets import load
from tests.support.private_redis import PrivateRedis

BASELINE = "redis-py asyncio packer"
CANDIDATE = "hiredis.pack_command (the store's)"
CLASSES: dict[str, type[Any]] = {
    BASELINE: aioredis.Connection,
    CANDIDATE: packed_by_hiredis(aioredis.Connection),
}


def pending(items: int) -> list[PendingPrediction]:
    rows = load("a9a").X[:items].toarray()
    now = time.time()
    ids = [make_prediction_id("bench", 1, now) for _ in rows]
    examples = [Example.dense(row) for row in rows]
    return [PendingPrediction(pid, x, 1, 0.25, now) for pid, x in zip(ids, examples, strict=True)]


def captured_args(url: str, items: list[PendingPrediction]) -> tuple[Any, ...]:
    """The arguments ``put_pending`` hands to ``pack_command``."""
    seen: list[tuple[Any, ...]] = []

    class Capturing(aioredis.Connection):
        def pack_command(self, *args: Any) -> list[bytes]:
            seen.append(args)
            return super().pack_command(*args)

    asyncio.run(put_pending_calls(url, Capturing, items, 1))
    return next(a for a in seen if a[0] in ("EVALSHA", "EVAL"))


async def put_pending_calls(url: str, cls: type[Any], items: list[PendingPrediction], calls: int) -> float:
    client = connect(url)
    assert isinstance(client, aioredis.Redis)
    client.connection_pool.connection_class = cls
    store = RedisModelStore(client)
    try:
        await store.put_pending("bench", 1, items, 60.0)  # loads the script, opens the connection
        start = time.perf_counter()
        for _ in range(calls):
            await store.put_pending("bench", 1, items, 60.0)
        return (time.perf_counter() - start) / calls
    finally:
        await client.aclose()


def pack_seconds(cls: type[Any], args: tuple[Any, ...], calls: int) -> float:
    pack = cls().pack_command
    start = time.process_time()
    for _ in range(calls):
        pack(*args)
    return (time.process_time() - start) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default=None, help="write the section into this markdown file")
    args = parser.parse_args(argv)
    items = pending(args.items)
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = PrivateRedis(Path(tmp))
        server.start()
        try:
            command = captured_args(server.url, items)
            wire = {b"".join(cls().pack_command(*command)) for cls in CLASSES.values()}
            assert len(wire) == 1, "the packers disagree"
            size = len(wire.pop())
            for _ in range(args.repeats):
                for name, cls in CLASSES.items():
                    times.setdefault((name, "pack"), []).append(pack_seconds(cls, command, args.calls))
                    seconds = asyncio.run(put_pending_calls(server.url, cls, items, args.calls))
                    times.setdefault((name, "put_pending"), []).append(seconds)
        finally:
            server.close()
    lines = [
        "## Redis command packing (`python -m bench.command_packing`)",
        "",
        f"Command: `python -m bench.command_packing --items {args.items} --calls {args.calls} "
        f"--repeats {args.repeats}`. Python {platform.python_version()}. The store's pending write of "
        f"{args.items} predictions (a9a rows, 123 dense features; {len(command)} arguments, "
        f"{size:,} bytes on the wire, the same "
        "bytes from both packers); *pack*: CPU time of `pack_command`; *put_pending*: the whole call "
        "against a private redis-server, wall time. Median of the repeats (min to max); the ratio is "
        "taken within each repeat.",
        "",
        f"| step | {BASELINE}, us/call | {CANDIDATE}, us/call | candidate / baseline "
        "| per prediction saved, us |",
        "|---|---:|---:|---:|---:|",
    ]
    for step in ("pack", "put_pending"):
        base = np.array(times[(BASELINE, step)]) * 1e6
        cand = np.array(times[(CANDIDATE, step)]) * 1e6
        saved = (base - cand) / args.items
        lines.append(
            f"| {step} | {spread(base, 1)} | {spread(cand, 1)} | {spread(cand / base, 2)} "
            f"| {spread(saved, 2)} |"
        )
    return publish("\n".join(lines), args.output, "command-packing")


if __name__ == "__main__":
    sys.exit(main())
