"""Client overhead: what ``service.client`` costs next to hand-written httpx and websockets calls.

    .venv/bin/python -m bench.client_overhead [--quick] [--output docs/benchmarks.md]

One service (``acog serve``, a private Redis), the default model on a9a's 123 features. Each
scenario sends the same requests two ways, alternating, ``--repeats`` times:

- **baseline**: what a user writes without the SDK: ``httpx.Client.post(..., json=body)`` and
  ``response.json()``; for the WebSocket, ``websockets`` with ``window`` messages in flight,
  ``json.dumps``/``json.loads`` and replies matched by id in a dict;
- **client**: the same calls through :class:`service.client.Client` (typed replies, retry
  policy, error mapping) and its ``stream().predict_many``.

Reported: calls (or messages) a second, median over the repeats with min-max, and the ratio
client / baseline per repeat (median, min-max). Both ways talk to the same server in the same
run, so the ratio says what the SDK adds on the client's side of each call; on a busy machine
the server's own variance dominates it. So a second table isolates the client's side: the
same calls through an in-process transport (``httpx.MockTransport`` answering a recorded
reply of the real service), CPU microseconds per call, baseline and client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.report import cpu_model, write_section
from service.client import Client
from service.datasets import load
from tests.support.private_redis import PrivateRedis
from tests.support.service_process import ServiceProcess

MODEL = "default"


def rate(count: int, run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return count / (time.perf_counter() - started)


async def raw_websocket(url: str, rows: list[list[float]], window: int) -> None:
    """Pipelined predict messages with plain websockets: ``window`` in flight, matched by id."""
    import websockets

    async with websockets.connect(url, max_size=None) as ws:
        waiting: dict[int, asyncio.Future[Any]] = {}
        slots = asyncio.Semaphore(window)

        async def read() -> None:
            async for text in ws:
                reply = json.loads(text)
                waiting.pop(reply["id"]).set_result(reply)
                slots.release()

        reader = asyncio.create_task(read())
        loop = asyncio.get_running_loop()
        futures = []
        for i, row in enumerate(rows):
            await slots.acquire()
            futures.append(waiting.setdefault(i, loop.create_future()))
            await ws.send(json.dumps({"type": "predict", "id": i, "model": MODEL, "features": row}))
        replies = await asyncio.gather(*futures)
        assert all(r["ok"] for r in replies)
        reader.cancel()


def scenarios(url: str, ws_url: str, rows: list[list[float]], labels: list[int], n: int) -> dict[str, Any]:
    http = httpx.Client(base_url=url, timeout=60)
    client = Client(url, model=MODEL, timeout=60)
    batch = rows[:100]

    def pending(count: int) -> list[tuple[str, int]]:
        out = []
        for start in range(0, count, 1000):
            predictions = client.predict_batch(rows[start : start + min(1000, count - start)])
            out += [(p.prediction_id, labels[start + k]) for k, p in enumerate(predictions)]
        return out

    def raw_single() -> None:
        for row in rows[:n]:
            http.post("/predict", json={"model": MODEL, "features": row}).json()

    def sdk_single() -> None:
        for row in rows[:n]:
            client.predict(row)

    def raw_batch() -> None:
        for _ in range(n // 100):
            http.post("/predict", json={"model": MODEL, "instances": batch}).json()

    def sdk_batch() -> None:
        for _ in range(n // 100):
            client.predict_batch(batch)

    def labels_for(way: str) -> Callable[[], None]:
        """Fresh stored predictions for each run (a label counts once), made before the clock starts."""
        items = pending(n)

        def raw() -> None:
            for p, y in items:
                http.post("/feedback", json={"prediction_id": p, "label": y}).json()

        def sdk() -> None:
            for p, y in items:
                client.feedback(p, y)

        return raw if way == "baseline" else sdk

    def ws(way: str) -> Callable[[], None]:
        if way == "baseline":
            return lambda: asyncio.run(raw_websocket(ws_url, rows[:n], 64))

        def run() -> None:
            with client.stream(window=64) as stream:
                stream.predict_many(rows[:n])

        return run

    plans: dict[str, tuple[int, Callable[[str], Callable[[], None]]]] = {
        "/predict, one instance per call": (n, lambda w: raw_single if w == "baseline" else sdk_single),
        "/predict, 100 instances per call": (n // 100, lambda w: raw_batch if w == "baseline" else sdk_batch),
        "/feedback, one label per call": (n, labels_for),
        "WebSocket predict, 64 in flight": (n, ws),
    }

    def close() -> None:
        http.close()
        client.close()

    return {"plans": plans, "close": close}


def in_process(
    url: str, row: list[float], batch: list[list[float]], repeats: int
) -> dict[str, dict[str, list[float]]]:
    """Microseconds per call with the server's recorded replies served in process."""
    with httpx.Client(base_url=url, timeout=60) as http:
        replies = {
            "single": http.post("/predict", json={"model": MODEL, "features": row}).content,
            "batch": http.post("/predict", json={"model": MODEL, "instances": batch}).content,
        }
    out: dict[str, dict[str, list[float]]] = {}
    for name, body, reply in (
        ("/predict, one instance per call", row, replies["single"]),
        ("/predict, 100 instances per call", batch, replies["batch"]),
    ):
        transport = httpx.MockTransport(lambda request, reply=reply: httpx.Response(200, content=reply))
        raw = httpx.Client(base_url=url, transport=transport)
        client = Client(url, model=MODEL)
        client.http = httpx.Client(base_url=url, transport=transport)
        single = name.startswith("/predict, one")

        def baseline(raw: httpx.Client = raw, body: Any = body, single: bool = single) -> None:
            key = "features" if single else "instances"
            raw.post("/predict", json={"model": MODEL, key: body}).json()

        def sdk(client: Client = client, body: Any = body, single: bool = single) -> None:
            client.predict(body) if single else client.predict_batch(body)

        calls = 2000 if single else 200
        runs: dict[str, list[float]] = {"baseline": [], "client": []}
        ways: list[tuple[str, Callable[[], None]]] = [("baseline", baseline), ("client", sdk)]
        for k in range(repeats + 1):
            for way, call in ways if k % 2 == 0 else ways[::-1]:
                started = time.perf_counter()
                for _ in range(calls):
                    call()
                if k:  # the first round warms up
                    runs[way].append((time.perf_counter() - started) / calls * 1e6)
        out[name] = runs
        raw.close()
        client.close()
    return out


def measure(plans: dict[str, Any], repeats: int) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {}
    for name, (count, make) in plans.items():
        make("baseline")()  # warm up both ways (connections, code paths)
        make("client")()
        runs: dict[str, list[float]] = {"baseline": [], "client": []}
        for k in range(repeats):
            for way in ("baseline", "client") if k % 2 == 0 else ("client", "baseline"):
                run = make(way)
                runs[way].append(rate(count, run))
        out[name] = runs
    return out


def report(
    results: dict[str, dict[str, list[float]]], local: dict[str, dict[str, list[float]]], command: str
) -> str:
    def spread(values: list[float], fmt: str) -> str:
        return f"{statistics.median(values):{fmt}} ({min(values):{fmt}} to {max(values):{fmt}})"

    lines = [
        "## Client overhead (`python -m bench.client_overhead`)",
        "",
        f"Command: `{command}`. Machine: {cpu_model(platform.processor())}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}. One `acog serve` process and a private Redis; the client "
        "runs in the benchmark's process, on the same machine. Baseline: hand-written httpx "
        "(`post(json=...)`, `.json()`) and websockets (64 in flight, replies matched by id).",
        "",
        "| calls | baseline per s | client per s | client / baseline |",
        "|---|---:|---:|---:|",
    ]
    for name, runs in results.items():
        ratios = [c / b for c, b in zip(runs["client"], runs["baseline"], strict=True)]
        lines.append(
            f"| {name} | {spread(runs['baseline'], ',.0f')} | {spread(runs['client'], ',.0f')} | "
            f"{spread(ratios, '.2f')} |"
        )
    lines += [
        "",
        f"Median over {len(next(iter(results.values()))['baseline'])} alternating repeats (min to max); "
        "the ratio is taken per repeat. Below 1.00 the client is slower than the hand-written call.",
        "",
        "The client's own side, through an in-process transport that answers the service's recorded "
        "reply (no network, no server: encoding the body, httpx, reading the reply); here the ratio is "
        "of times, so above 1.00 the client takes longer:",
        "",
        "| calls | baseline us/call | client us/call | client / baseline |",
        "|---|---:|---:|---:|",
    ]
    for name, runs in local.items():
        ratios = [c / b for c, b in zip(runs["client"], runs["baseline"], strict=True)]
        lines.append(
            f"| {name} | {spread(runs['baseline'], ',.0f')} | {spread(runs['client'], ',.0f')} | "
            f"{spread(ratios, '.2f')} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--output", default=None, help="write the section into this markdown file")
    args = parser.parse_args(argv)
    n = 500 if args.quick else 2000
    repeats = args.repeats or (3 if args.quick else 7)
    data = load("a9a")
    rows = data.X[: max(n, 1000)].toarray().tolist()
    labels = [int(v) for v in data.y[: len(rows)]]
    with tempfile.TemporaryDirectory() as tmp:
        redis_server = PrivateRedis(Path(tmp))
        redis_server.start()
        env = {
            "ACOG_REDIS_URL": redis_server.url,
            "ACOG_DEFAULT_MODEL": '{"name": "default", "n_features": 123}',
            "ACOG_MAX_BATCH": "1000",
            "ACOG_WS_MAX_MESSAGES_PER_SECOND": "1000000",
        }
        service = ServiceProcess(Path(tmp), env)
        try:
            service.start()
            setup = scenarios(service.url, service.ws_url, rows, labels, n)
            try:
                results = measure(setup["plans"], repeats)
            finally:
                setup["close"]()
            local = in_process(service.url, rows[0], rows[:100], repeats)
        finally:
            service.kill()
            redis_server.close()
    command = " ".join(["python -m bench.client_overhead", *(["--quick"] if args.quick else [])])
    text = report(results, local, command)
    print(text)
    if args.output:
        write_section(args.output, "client-overhead", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
