"""What one Redis round trip costs the client's CPU: redis-py's asyncio client against the protocol.

    .venv/bin/python -m bench.redis_round_trip [--calls 3000] [--repeats 5] [--output docs/benchmarks.md]

One command at a time, each awaited before the next, as a request that arrives alone pays it
(a prediction's pending write under an open-loop load, a lone label's append). Each row sends the
same bytes to a private redis-server and reads the same reply, on the event loop the service runs
on (uvloop under uvicorn) and on asyncio's own, and is timed by this process's CPU (``time.process_time``: the
client's Python and its system calls, never the server's):

- *protocol* (the baseline): an ``asyncio.Protocol`` writing the packed command and a
  ``hiredis.Reader`` parsing the reply; the floor of any asyncio client;
- *redis-py connection*: ``redis.asyncio.Connection``'s ``send_packed_command`` and
  ``read_response`` (its hiredis parser), no pool, no client;
- *redis-py client*: ``execute_command`` on the client the store builds
  (:func:`model_store.connection.connect`: the pool, retries, timeouts, hiredis packing).

Two commands: ``PING``, and the store's pending write of one prediction (``EVALSHA`` of its script,
a9a's 123 dense features). Median of the repeats (min to max), and each row's CPU as a multiple of
the baseline's within each repeat.

A second table times the store's own call, ``RedisModelStore.put_pending`` of one prediction,
the same way: through its redis-py client (``pipelined=False``, the baseline there) and through its
pipelined connection (:mod:`model_store.pipelined`, the default).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import hiredis
import numpy as np
import redis
import redis.asyncio as aioredis
import uvloop

from bench.command_packing import captured_args, pending
from bench.report import publish, spread
from model_store.connection import connect
from model_store.redis_store import RedisModelStore
from tests.support.private_redis import PrivateRedis

BASELINE = "protocol (asyncio.Protocol + hiredis.Reader)"
RUNNERS: dict[str, Callable[[Any], Any]] = {"uvloop": uvloop.run, "asyncio": asyncio.run}
"""The event loops: uvloop (uvicorn's choice when it is installed, as it is here) and asyncio's own."""
ROWS = (BASELINE, "redis-py connection", "redis-py client (the store's)")


class _Replies(asyncio.Protocol):
    """Writes packed commands and hands back each parsed reply."""

    def __init__(self) -> None:
        self.reader = hiredis.Reader()
        self.waiting: asyncio.Future[Any] | None = None
        self.transport: Any = None  # uvloop's transports are not asyncio.Transport subclasses

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        reply = self.reader.gets()
        if reply is not False and self.waiting is not None:
            self.waiting.set_result(reply)

    async def call(self, packed: bytes) -> Any:
        self.waiting = asyncio.get_running_loop().create_future()
        self.transport.write(packed)
        return await self.waiting


async def timed(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    """CPU seconds per call, after a warm-up."""
    for _ in range(200):
        await call()
    start = time.process_time()
    for _ in range(calls):
        await call()
    return (time.process_time() - start) / calls


async def one_repeat(
    host: str, port: int, url: str, commands: dict[str, tuple[Any, ...]], calls: int
) -> dict[Any, float]:
    out: dict[tuple[str, str], float] = {}
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_connection(_Replies, host, port)
    connection = aioredis.Connection(host=host, port=port)
    await connection.connect()
    client = connect(url)
    try:
        for name, args in commands.items():
            packed = hiredis.pack_command(args)
            reply = await protocol.call(packed)
            assert not isinstance(reply, Exception), (name, reply)  # the command works as sent
            await client.execute_command(*args)

            async def raw(packed: bytes = packed) -> None:
                await protocol.call(packed)

            async def bare(packed: bytes = packed) -> None:
                await connection.send_packed_command([packed])
                await connection.read_response()

            async def full(args: tuple[Any, ...] = args) -> None:
                await client.execute_command(*args)

            calls_of: list[Callable[[], Awaitable[Any]]] = [raw, bare, full]
            for row, call in zip(ROWS, calls_of, strict=True):
                out[(row, name)] = await timed(call, calls)
    finally:
        transport.close()
        await connection.disconnect()
        await client.aclose()
    return out


STORE_ROWS = ("redis-py client (pipelined=False)", "pipelined connection (the default)")


async def store_repeat(url: str, calls: int) -> dict[str, float]:
    """CPU per lone ``put_pending`` of one prediction, through each of the store's two paths."""
    items = pending(1)
    out: dict[str, float] = {}
    for row, pipelined in zip(STORE_ROWS, (False, True), strict=True):
        store = RedisModelStore(connect(url), pipelined=pipelined)

        async def call(store: RedisModelStore = store) -> None:
            await store.put_pending("bench", 1, items, 600.0)

        try:
            out[row] = await timed(call, calls)
        finally:
            await store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default=None, help="write the section into this markdown file")
    args = parser.parse_args(argv)
    times: dict[tuple[str, str, str], list[float]] = {}
    store_times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = PrivateRedis(Path(tmp))
        server.start()
        try:
            evalsha = captured_args(server.url, pending(1))
            commands = {"PING": ("PING",), "pending write, 1 prediction (EVALSHA)": evalsha}
            for _ in range(args.repeats):
                for loop, run in RUNNERS.items():
                    result = run(one_repeat("127.0.0.1", server.port, server.url, commands, args.calls))
                    for (row, name), seconds in result.items():
                        times.setdefault((loop, row, name), []).append(seconds)
                for row, seconds in uvloop.run(store_repeat(server.url, args.calls)).items():
                    store_times.setdefault(row, []).append(seconds)
        finally:
            server.close()
    lines = [
        "## One Redis round trip, client CPU (`python -m bench.redis_round_trip`)",
        "",
        f"Command: `python -m bench.redis_round_trip --calls {args.calls} --repeats {args.repeats}`. "
        f"Python {platform.python_version()}, redis-py {redis.__version__}, hiredis {hiredis.__version__}, "
        f"uvloop {uvloop.__version__}. One command at a time against a private "
        "redis-server; CPU time of this process per call (the client's Python and system calls). "
        f"Baseline: {BASELINE} on uvloop. Median of the repeats (min to max); the multiple is taken within "
        "each repeat.",
        "",
        "| command | event loop | client | us CPU per call | x baseline |",
        "|---|---|---|---:|---:|",
    ]
    for name in commands:
        base = np.array(times[("uvloop", BASELINE, name)]) * 1e6
        for loop in RUNNERS:
            for row in ROWS:
                cpu = np.array(times[(loop, row, name)]) * 1e6
                lines.append(f"| {name} | {loop} | {row} | {spread(cpu, 1)} | {spread(cpu / base, 2)} |")
    name = "pending write, 1 prediction (EVALSHA)"
    extra = (np.array(times[("uvloop", ROWS[2], name)]) - np.array(times[("uvloop", BASELINE, name)])) * 1e6
    lines += [
        "",
        f"A pending write sent alone costs the store's client {spread(extra, 1)} us of CPU more than the "
        "protocol floor on uvloop: a request that arrives alone (an open-loop load at a moderate rate) "
        "pays it whole. Under load the service groups a model's pending writes, and its labels, into "
        "one call per round trip (`service/engine/pending.py`, `service/engine/appender.py`), so it is "
        "paid per call, not per prediction.",
        "",
        "The store's own pending write of one prediction (`RedisModelStore.put_pending`, its argument "
        "encoding included), sent alone on uvloop; baseline: the redis-py client path:",
        "",
        "| store path | us CPU per call | x baseline |",
        "|---|---:|---:|",
    ]
    store_base = np.array(store_times[STORE_ROWS[0]]) * 1e6
    for row in STORE_ROWS:
        cpu = np.array(store_times[row]) * 1e6
        lines.append(f"| {row} | {spread(cpu, 1)} | {spread(cpu / store_base, 2)} |")
    saved = store_base - np.array(store_times[STORE_ROWS[1]]) * 1e6
    lines += [
        "",
        f"The pipelined connection saves {spread(saved, 1)} us of CPU per lone pending write or label "
        "append (`model_store/pipelined.py`: one connection, every call written at once and its reply "
        "matched in order; anything unusual is handed back to the redis-py client).",
    ]
    return publish("\n".join(lines), args.output, "redis-round-trip")


if __name__ == "__main__":
    sys.exit(main())
