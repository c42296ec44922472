"""The one loop that streams a labelled data set through the service: predict now, label later.

``acog replay``, the load benchmark and the end-to-end tests all send data this way:

- examples go out in ``order``, ``batch`` per ``/predict`` request (one ``features`` call
  when ``batch`` is 1), paced by ``rate`` (example ``k`` leaves at ``t0 + k / rate``);
- each example's true label falls due ``delay`` seconds after its prediction came back;
  after every request, the labels due by then go out in ``/feedback`` batches of at most
  ``label_batch``, oldest first. With ``delay=0`` a request's labels follow it at once, so
  every request is scored by a model that has learned every earlier label;
- once every example is out, the loop waits for the remaining labels and sends them.

The client's retries (:mod:`service.client.retry`) make the loop safe across restarts of the
service or its store: a retried label counts once.

:func:`replay` yields a :class:`Step` after each request (and after each late delivery at
the end), so a caller can check every answer, count, draw a progress bar or act between
requests (a crash test kills the service there).
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .client.calls import Label
from .client.payloads import Features
from .client.sync_client import Client
from .client.types import FeedbackResult, Prediction


class Rows(Protocol):
    """What :func:`replay` reads the examples from: a list, or anything indexable by row."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int, /) -> Features: ...


@dataclass(frozen=True)
class Step:
    """What one step of :func:`replay` sent and got: the rows predicted (indices into the
    data), their predictions in the same order, and the label results delivered after them."""

    rows: list[int]
    predictions: list[Prediction]
    labelled: list[FeedbackResult] = field(default_factory=list)


@dataclass(order=True)
class _Due:
    due: float
    seq: int
    prediction_id: str = field(compare=False)
    label: Label = field(compare=False)


def seeded_order(n: int, limit: int | None = None, loop: bool = False, seed: int = 0) -> Iterator[int]:
    """Row indices in a seeded random order: one permutation of ``range(n)`` after another
    (with ``loop``), ``limit`` of them at most."""
    rng = np.random.default_rng(seed)
    limit = n if limit is None else limit
    sent = 0
    while sent < limit:
        for i in rng.permutation(n):
            if sent == limit:
                return
            yield int(i)
            sent += 1
        if not loop:
            return


def replay(
    client: Client,
    rows: Rows,
    labels: Sequence[Label],
    *,
    model: str | None = None,
    order: Iterable[int] | None = None,
    batch: int = 1,
    delay: float = 0.0,
    rate: float | None = None,
    label_batch: int = 500,
) -> Iterator[Step]:
    """Predict ``rows[i]`` for each ``i`` of ``order`` (default: in sequence) and send
    ``labels[i]`` ``delay`` seconds later; see the module docstring."""
    if batch < 1 or label_batch < 1 or delay < 0 or (rate is not None and rate <= 0):
        raise ValueError("batch and label_batch must be >= 1, delay >= 0 and rate > 0")
    indices = iter(range(len(rows)) if order is None else order)
    due: list[_Due] = []
    seq = itertools.count()
    started = time.monotonic()
    sent = 0
    while chunk := list(itertools.islice(indices, batch)):
        if rate is not None:
            time.sleep(max(0.0, started + sent / rate - time.monotonic()))
        if len(chunk) == 1 and batch == 1:
            predictions = [client.predict(rows[chunk[0]], model=model)]
        else:
            predictions = client.predict_batch([rows[i] for i in chunk], model=model)
        now = time.monotonic()
        for prediction, i in zip(predictions, chunk, strict=True):
            heapq.heappush(due, _Due(now + delay, next(seq), prediction.prediction_id, labels[i]))
        sent += len(chunk)
        yield Step(chunk, predictions, _deliver(client, due, now, label_batch))
    while due:
        time.sleep(max(0.0, due[0].due - time.monotonic()))
        yield Step([], [], _deliver(client, due, time.monotonic(), label_batch))


def _deliver(client: Client, due: list[_Due], now: float, label_batch: int) -> list[FeedbackResult]:
    """Send every label due by ``now``, oldest first."""
    ready: list[_Due] = []
    while due and due[0].due <= now:
        ready.append(heapq.heappop(due))
    results: list[FeedbackResult] = []
    for start in range(0, len(ready), label_batch):
        part = ready[start : start + label_batch]
        results += client.feedback_batch([(d.prediction_id, d.label) for d in part])
    return results
