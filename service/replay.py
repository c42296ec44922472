"""``acog replay``: send a data set through a running service as live traffic.

For each example, in a seeded random order: ``POST /predict`` now, then ``POST /feedback``
with its true label ``--delay`` seconds later (labels that fall due together go in one
batch). ``--limit`` bounds the number of examples sent (the data set repeats with
``--loop``), ``--rate`` paces them, so a dashboard moves at a readable speed and a load
never runs away. The model is created with the data set's dimension if it does not exist.

It talks to the API like any client: retries a label with the same prediction id after a
503 or a dropped connection (it then counts once), and prints the model's measures at the
end.
"""

from __future__ import annotations

import argparse
import heapq
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import numpy as np
from tqdm import tqdm

from .evaluation.datasets import load

RETRIES = 50


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="the service, e.g. http://127.0.0.1:8000")
    parser.add_argument("dataset", help="a data set name or file, as for `acog evaluate`")
    parser.add_argument("--model", default="default", help="model to send to (created if absent)")
    parser.add_argument("--delay", type=float, default=1.0, help="seconds between a prediction and its label")
    parser.add_argument(
        "--limit", type=int, default=None, help="examples to send (default: the data set once)"
    )
    parser.add_argument("--loop", action="store_true", help="repeat the data set until --limit examples")
    parser.add_argument(
        "--rate", type=float, default=None, help="examples per second (default: as fast as served)"
    )
    parser.add_argument("--batch", type=int, default=1, help="examples per /predict request")
    parser.add_argument("--seed", type=int, default=0, help="seed of the example order")
    parser.add_argument(
        "--api-key", default=os.environ.get("ACOG_API_KEY"), help="Bearer key (or ACOG_API_KEY)"
    )
    parser.add_argument("--datasets-dir", default=None)
    parser.add_argument(
        "--wait", type=float, default=60.0, help="seconds to wait for the service to be ready"
    )


@dataclass(order=True)
class DueLabel:
    due: float
    prediction_id: str
    label: int


class Client:
    """httpx with retries: transport errors and 503s are retried, anything else is final."""

    def __init__(self, url: str, api_key: str | None) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=30)
        self.requests = 0

    def call(self, method: str, path: str, body: dict | None = None) -> httpx.Response:
        for attempt in range(RETRIES):
            try:
                self.requests += 1
                response = self.http.request(method, path, json=body)
                if response.status_code != 503:
                    return response
                wait = float(response.headers.get("Retry-After", "1"))
            except httpx.TransportError:
                wait = min(2.0, 0.1 * 2**attempt)
            time.sleep(wait)
        raise SystemExit(f"acog replay: {method} {path} kept failing after {RETRIES} attempts")

    def wait_ready(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if self.http.get("/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise SystemExit(f"acog replay: {self.http.base_url} was not ready within {seconds:g} s")


def _order(n: int, limit: int, loop: bool, seed: int) -> Iterator[int]:
    rng = np.random.default_rng(seed)
    sent = 0
    while sent < limit:
        for i in rng.permutation(n):
            if sent == limit:
                return
            yield int(i)
            sent += 1
        if not loop:
            return


def run_replay(args: argparse.Namespace) -> int:
    data = load(args.dataset, datasets_dir=args.datasets_dir)
    X = data.X.tocsr()
    limit = args.limit if args.limit is not None else data.n_samples
    if limit < 1 or args.batch < 1 or args.delay < 0 or (args.rate is not None and args.rate <= 0):
        raise SystemExit("acog replay: --limit and --batch must be >= 1, --delay >= 0, --rate > 0")
    client = Client(args.url, args.api_key)
    client.wait_ready(args.wait)
    model = client.call("GET", f"/models/{args.model}")
    if model.status_code == 404:
        created = client.call("PUT", f"/models/{args.model}", {"n_features": data.n_features})
        if created.status_code not in (200, 201):
            raise SystemExit(f"acog replay: cannot create model {args.model!r}: {created.text}")
    elif model.status_code != 200:
        raise SystemExit(f"acog replay: GET /models/{args.model}: {model.status_code} {model.text}")

    due: list[DueLabel] = []
    started = time.monotonic()
    sent = labelled = 0
    order = list(_order(data.n_samples, limit, args.loop, args.seed))
    bar = tqdm(total=len(order), unit="ex", disable=not sys.stderr.isatty(), file=sys.stderr, desc=data.name)
    with bar:
        for start in range(0, len(order), args.batch):
            rows = order[start : start + args.batch]
            if args.rate is not None:  # pace: example k goes out at started + k / rate
                time.sleep(max(0.0, started + sent / args.rate - time.monotonic()))
            instances = [X[i].toarray().ravel().tolist() for i in rows]
            reply = client.call("POST", "/predict", {"model": args.model, "instances": instances})
            if reply.status_code != 200:
                raise SystemExit(f"acog replay: /predict: {reply.status_code} {reply.text}")
            now = time.monotonic()
            for prediction, i in zip(reply.json()["predictions"], rows, strict=True):
                heapq.heappush(due, DueLabel(now + args.delay, prediction["prediction_id"], int(data.y[i])))
            sent += len(rows)
            labelled += _send_due(client, due, now)
            bar.update(len(rows))
        while due:
            time.sleep(max(0.0, due[0].due - time.monotonic()))
            labelled += _send_due(client, due, time.monotonic())
    info = client.call("GET", f"/models/{args.model}").json()
    measures = (info.get("state") or {}).get("measures", {})
    print(
        f"sent {sent} examples and {labelled} labels in {client.requests} requests "
        f"({time.monotonic() - started:.1f} s); model {args.model!r} at version "
        f"{(info.get('state') or {}).get('version')}: weighted sum {measures.get('weighted_sum')}, "
        f"weighted cost {measures.get('weighted_cost')}"
    )
    return 0


def _send_due(client: Client, due: list[DueLabel], now: float) -> int:
    items = []
    while due and due[0].due <= now:
        label = heapq.heappop(due)
        items.append({"prediction_id": label.prediction_id, "label": label.label})
    for start in range(0, len(items), 500):
        chunk = items[start : start + 500]
        reply = client.call("POST", "/feedback", {"items": chunk})
        if reply.status_code != 200:
            raise SystemExit(f"acog replay: /feedback: {reply.status_code} {reply.text}")
    return len(items)
