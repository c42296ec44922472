"""Load from a separate process: open-loop HTTP at a fixed rate, and a pipelined WebSocket.

    python -m bench.loadgen open-loop URL PATH BODY_FILE --rate 1000 --count 10000
    python -m bench.loadgen websocket WS_URL MESSAGES_FILE --window 64

Prints one JSON object. The open-loop generator sends request ``i`` at ``t0 + i / rate``
over a pool of keep-alive connections, whatever earlier requests are doing, and measures
each latency from that *scheduled* time, so a stall in the server shows up in the
percentiles instead of slowing the load (no coordinated omission). Requests are bytes
prepared in advance; the client does no JSON work while timing. Before the schedule starts,
each connection carries one untimed request (so the server has accepted every connection)
and every request's task exists (making them takes the client tens of milliseconds). The client
runs uvloop's event loop when installed and makes no garbage collection while it measures
(:func:`quiet_client`), so that its own pauses are not counted as the server's latency.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import sys
import time
from urllib.parse import urlsplit

import numpy as np


def percentiles(latencies: list[float]) -> dict[str, float]:
    values = np.asarray(latencies) * 1e3
    return {f"p{q}": float(np.percentile(values, q)) for q in (50, 90, 99, 99.9)} | {
        "max": float(values.max())
    }


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    await reader.readexactly(length)
    return status


async def open_loop(url: str, path: str, bodies: list[bytes], rate: float, connections: int) -> dict:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    requests = [
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(b)}\r\n\r\n".encode()
        + b
        for b in bodies
    ]
    pool: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    for _ in range(connections):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(requests[0])  # one untimed request each: the server has accepted them all
        await _read_response(reader)
        pool.put_nowait((reader, writer))
    latencies: list[float] = []
    errors = 0
    start = math.inf  # set once every request's task exists (below)

    async def one(i: int) -> None:
        nonlocal errors
        due = start + i / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        reader, writer = await pool.get()
        writer.write(requests[i])
        status = await _read_response(reader)
        latencies.append(time.perf_counter() - due)
        errors += status != 200
        pool.put_nowait((reader, writer))

    tasks = [asyncio.ensure_future(one(i)) for i in range(len(requests))]
    gc.collect()
    gc.freeze()  # the client's own collections are not the server's latency (see quiet_client)
    # The schedule starts after the tasks are made (none has run yet): making thousands of tasks
    # takes the client tens of milliseconds, which a schedule fixed before would charge to the
    # first requests' latencies as if the server had stalled.
    start = time.perf_counter() + 0.05
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    while not pool.empty():
        pool.get_nowait()[1].close()
    return {
        "count": len(requests),
        "errors": errors,
        "seconds": elapsed,
        "achieved_rate": len(requests) / elapsed,
        **percentiles(latencies),
    }


async def websocket(url: str, messages: list[str], window: int) -> dict:
    import websockets

    latencies: list[float] = []
    sent_at: dict[int, float] = {}
    errors = 0
    async with websockets.connect(url, max_size=None) as ws:
        in_flight = asyncio.Semaphore(window)

        async def send_all() -> None:
            for i, message in enumerate(messages):
                await in_flight.acquire()
                sent_at[i] = time.perf_counter()
                await ws.send(message)

        start = time.perf_counter()
        sender = asyncio.create_task(send_all())
        for _ in messages:
            reply = json.loads(await ws.recv())
            latencies.append(time.perf_counter() - sent_at[reply["id"]])
            errors += not reply.get("ok")
            in_flight.release()
        await sender
        elapsed = time.perf_counter() - start
    return {
        "count": len(messages),
        "errors": errors,
        "seconds": elapsed,
        "messages_per_second": len(messages) / elapsed,
        **percentiles(latencies),
    }


def quiet_client() -> None:
    """Keep the generator's own pauses out of the latencies: uvloop's event loop (a C loop, as the
    server's) when installed, and no young collections while the load runs (the requests, their
    tasks and latencies are all the garbage there is; a collection walking thousands of pending
    tasks would stall every request due at that moment, and the stall would be charged to the
    server)."""
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    gc.set_threshold(10**6, 1000, 1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    o = sub.add_parser("open-loop")
    o.add_argument("url")
    o.add_argument("path")
    o.add_argument("bodies", help="a file with one JSON body per line")
    o.add_argument("--rate", type=float, required=True)
    o.add_argument("--connections", type=int, default=32)
    w = sub.add_parser("websocket")
    w.add_argument("url")
    w.add_argument("messages", help="a file with one JSON message per line (each with an integer id)")
    w.add_argument("--window", type=int, default=64)
    args = parser.parse_args(argv)
    quiet_client()
    if args.mode == "open-loop":
        with open(args.bodies, "rb") as f:
            bodies = [line.rstrip(b"\n") for line in f if line.strip()]
        result = asyncio.run(open_loop(args.url, args.path, bodies, args.rate, args.connections))
    else:
        with open(args.messages) as f:
            messages = [line.rstrip("\n") for line in f if line.strip()]
        result = asyncio.run(websocket(args.url, messages, args.window))
    json.dump(result, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
