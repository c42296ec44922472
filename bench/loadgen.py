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

The WebSocket generator keeps ``--window`` messages in flight on one socket and works the same
way: its frames are built in advance and it reads the server's frames itself (:func:`websocket`),
so that the client, which shares the machine with the server, takes little of it (a client
library spent about as much CPU per message as the service did).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gc
import json
import math
import os
import sys
import time
from urllib.parse import urlsplit

import numpy as np
from websockets.frames import Close, Frame, Opcode


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


def client_frame(opcode: Opcode, payload: bytes) -> bytes:
    """One client frame as RFC 6455 puts it on the wire (final, masked), built by websockets."""
    return Frame(opcode, payload).serialize(mask=True, extensions=[])


class ServerFrames:
    """The server's frames (final, unmasked, as a server sends them) cut out of the bytes read."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """Append ``data``; the ``(opcode, payload)`` of every frame it completes, in order."""
        buffer = self.buffer
        buffer += data
        frames, at, size = [], 0, len(buffer)
        while size - at >= 2:
            first, length, head = buffer[at], buffer[at + 1], 2
            if length & 0x80 or not first & 0x80:
                raise ConnectionError("a masked or fragmented frame from the server")
            if length == 126:
                length, head = int.from_bytes(buffer[at + 2 : at + 4], "big"), 4
            elif length == 127:
                length, head = int.from_bytes(buffer[at + 2 : at + 10], "big"), 10
            if size - at < head + length:
                break
            frames.append((first & 0x0F, bytes(buffer[at + head : at + head + length])))
            at += head + length
        del buffer[:at]
        return frames


async def websocket(url: str, messages: list[str], window: int) -> dict:
    """Pipeline ``messages`` over one socket, at most ``window`` unanswered, and time each reply.

    Like the HTTP generators, the client does as little as it can while the clock runs: every
    message is a masked frame built before (:func:`client_frame`), the frames that refill the
    window after a read go in one write, and the server's frames are cut out of the bytes read
    (:class:`ServerFrames`); each reply is read with ``json.loads`` for its ``id`` and ``ok``.
    A ping is answered with its pong; a close from the server ends the run with an error.
    """
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    frames = [client_frame(Opcode.TEXT, m.encode()) for m in messages]
    reader, writer = await asyncio.open_connection(host, port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    if head.split(b" ", 2)[1] != b"101":
        raise ConnectionError(f"the server refused the WebSocket: {head.decode(errors='replace')}")
    incoming = ServerFrames()
    sent_at = [0.0] * len(frames)
    latencies: list[float] = []
    errors = sent = received = 0
    start = time.perf_counter()
    while received < len(frames):
        if sent < len(frames) and sent - received < window:  # refill the window, one write
            upto = min(len(frames), received + window)
            now = time.perf_counter()
            for i in range(sent, upto):
                sent_at[i] = now
            writer.write(b"".join(frames[sent:upto]))
            sent = upto
        data = await reader.read(1 << 18)
        if not data:
            raise ConnectionError("the server closed the connection")
        now = time.perf_counter()
        for opcode, payload in incoming.feed(data):
            if opcode == Opcode.TEXT.value:
                reply = json.loads(payload)
                latencies.append(now - sent_at[reply["id"]])
                errors += not reply.get("ok")
                received += 1
            elif opcode == Opcode.PING.value:
                writer.write(client_frame(Opcode.PONG, payload))
            elif opcode == Opcode.CLOSE.value:
                raise ConnectionError(f"the server closed the WebSocket: {payload!r}")
    elapsed = time.perf_counter() - start
    writer.write(client_frame(Opcode.CLOSE, Close(1000, "").serialize()))
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        await asyncio.wait_for(reader.read(), 5)  # the server's close, then its end of the stream
    writer.close()
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
