"""``acog replay``: send a data set through a running service as live traffic.

For each example, in a seeded random order: ``POST /predict`` now, then ``POST /feedback``
with its true label ``--delay`` seconds later (labels that fall due together go in one
batch). ``--limit`` bounds the number of examples sent (the data set repeats with
``--loop``), ``--rate`` paces them, so a dashboard moves at a readable speed and a load
never runs away. The model is created with the data set's dimension if it does not exist.

It is :func:`service.replay_loop.replay` on :class:`service.client.Client`: a label is
retried with the same prediction id after a 503 or a dropped connection (it then counts
once). It prints the model's measures at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from tqdm import tqdm

from .cli_options import (
    UsageError,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    service_url,
)
from .client import AcogError, Client, RetryPolicy
from .datasets.loading import load_dataset
from .replay_loop import replay, seeded_order

RETRIES = 50
REACH_SECONDS = 1.0
"""How long nothing may answer at the URL (connection refused, no such host) before replay gives up;
``--wait`` is for a service that answers but is not ready yet."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", type=service_url, help="the service, e.g. http://127.0.0.1:8000")
    parser.add_argument("dataset", help="a data set name or file, as for `acog evaluate`")
    parser.add_argument("--model", default="default", help="model to send to (created if absent)")
    parser.add_argument(
        "--delay", type=non_negative_float, default=1.0, help="seconds between a prediction and its label"
    )
    parser.add_argument(
        "--limit", type=positive_int, default=None, help="examples to send (default: the data set once)"
    )
    parser.add_argument("--loop", action="store_true", help="repeat the data set until --limit examples")
    parser.add_argument(
        "--rate", type=positive_float, default=None, help="examples per second (default: as fast as served)"
    )
    parser.add_argument("--batch", type=positive_int, default=1, help="examples per /predict request")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="seed of the example order")
    parser.add_argument(
        "--api-key", default=os.environ.get("ACOG_API_KEY"), help="Bearer key (default: $ACOG_API_KEY)"
    )
    parser.add_argument(
        "--datasets-dir", default=None, help="where the data set files live, as for `acog evaluate`"
    )
    parser.add_argument(
        "--wait", type=non_negative_float, default=60.0, help="seconds to wait for the service to be ready"
    )


class DenseRows:
    """The rows of a CSR matrix as dense lists, converted when sent."""

    def __init__(self, X: Any) -> None:
        self.X = X

    def __len__(self) -> int:
        return int(self.X.shape[0])

    def __getitem__(self, i: int) -> list[float]:
        row: list[float] = self.X[i].toarray().ravel().tolist()
        return row


def run_replay(args: argparse.Namespace) -> int:
    data = load_dataset(args.dataset, args.datasets_dir, both_classes=False)
    limit = args.limit if args.limit is not None else data.n_samples
    retry = RetryPolicy(attempts=RETRIES, backoff=0.1, max_backoff=2.0, deadline=600.0)
    with Client(args.url, api_key=args.api_key, model=args.model, retry=retry) as client:
        try:
            return _replay(client, args, data, limit)
        except AcogError as exc:
            raise UsageError(str(exc)) from None


def reach(url: str, seconds: float = REACH_SECONDS) -> None:
    """Return once anything answers HTTP at ``url`` (``/healthz``, any status); :class:`UsageError`
    if nothing does within ``seconds``: a dead port or host is refused at once, not after ``--wait``."""
    import httpx

    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(url.rstrip("/") + "/healthz", timeout=max(0.2, seconds))
            return
        except httpx.TransportError as exc:
            if time.monotonic() >= deadline:
                reason = " ".join(str(exc).split()) or type(exc).__name__
                raise UsageError(f"nothing answers at {url} ({reason}); is `acog serve` running?") from None
        time.sleep(0.1)


def _replay(client: Client, args: argparse.Namespace, data: Any, limit: int) -> int:
    reach(args.url)
    client.wait_ready(args.wait)
    client.ensure_model(args.model, {"n_features": data.n_features})
    started = time.monotonic()
    sent = labelled = refused = 0
    order = list(seeded_order(data.n_samples, limit, args.loop, args.seed))
    bar = tqdm(total=len(order), unit="ex", disable=not sys.stderr.isatty(), file=sys.stderr, desc=data.name)
    labels = [int(v) for v in data.y]
    with bar:
        for step in replay(
            client,
            DenseRows(data.X.tocsr()),
            labels,
            model=args.model,
            order=order,
            batch=args.batch,
            delay=args.delay,
            rate=args.rate,
        ):
            sent += len(step.rows)
            labelled += len(step.labelled)
            refused += sum(not r.ok for r in step.labelled)
            bar.update(len(step.rows))
    info = client.get_model(args.model)
    measures = info.measures
    print(
        f"sent {sent} examples and {labelled} labels ({refused} refused) in {client.requests} requests "
        f"({time.monotonic() - started:.1f} s); model {args.model!r} at version "
        f"{info.version}: weighted sum {measures.get('weighted_sum')}, "
        f"weighted cost {measures.get('weighted_cost')}"
    )
    return 0
