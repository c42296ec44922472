"""The run's traffic: ``acog replay`` processes, and the bad labels that feed the rejection panel."""

from __future__ import annotations

import heapq
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .paths import ROOT
from .progress import log

SECOND_MODEL = "breast_cancer"
LABEL_TTL_SECONDS = 15  # short, so that unlabelled predictions expire during the run


@dataclass(frozen=True)
class Mix:
    """What the bad-label driver sends for one model on each tick."""

    period: float  # seconds between ticks
    duplicates: int  # labels sent twice: the second is rejected as ``duplicate``
    unknown: int  # well-formed ids never issued: ``unknown``
    invalid: int  # requests with a label value the model does not take (0): ``invalid_label``
    expire: int  # predictions never labelled in time: swept as expired
    late_every: int  # one expired prediction in this many is labelled anyway: ``expired`` (0: none)
    slow: int  # predictions labelled correctly after 2-12 s: they move the label delay p99


# Distinct rates per reason, so that the panel's lines do not hide each other.
MIXES = {
    "default": Mix(1.0, duplicates=1, unknown=4, invalid=2, expire=3, late_every=4, slow=2),
    SECOND_MODEL: Mix(2.0, duplicates=3, unknown=5, invalid=1, expire=7, late_every=0, slow=3),
}


class BadLabels(threading.Thread):
    """Labels the service must reject, next to the replay's good ones, for one model.

    Predictions are made on real examples of the model's data set and good labels are the
    true ones, so the model keeps learning what the replay teaches it.
    """

    def __init__(self, url: str, model: str, dataset: str, mix: Mix, seed: int = 7) -> None:
        super().__init__(name=f"bad-labels-{model}", daemon=True)
        self.url = url
        self.model = model
        self.dataset = dataset
        self.mix = mix
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.sent: dict[str, int] = {}
        self.unlabelled: list[tuple[float, str, int]] = []
        self.slow: list[tuple[float, str, int]] = []
        self.expired = 0

    def run(self) -> None:
        import httpx

        from service.datasets import load

        data = load(self.dataset)
        X, y = data.X.tocsr(), data.y
        with httpx.Client(base_url=self.url, timeout=10) as client:
            while not self.stop_event.wait(self.mix.period):
                try:
                    self._tick(client, X, y)
                except httpx.HTTPError as exc:  # the run goes on; the panel shows fewer rejections
                    self.sent["errors"] = self.sent.get("errors", 0) + 1
                    log(f"bad labels ({self.model}): {exc}")

    def _count(self, what: str, response: Any, n: int = 1) -> None:
        key = f"{self.model} {what} -> {response.status_code}"
        self.sent[key] = self.sent.get(key, 0) + n

    def _post(self, client: Any, what: str, body: dict[str, Any], n: int = 1) -> None:
        self._count(what, client.post("/feedback", json=body), n)

    def _tick(self, client: Any, X: Any, y: Any) -> None:
        mix, rng, now = self.mix, self.rng, time.monotonic()
        rows = [rng.randrange(X.shape[0]) for _ in range(mix.duplicates + mix.expire + mix.slow)]
        instances = [X[i].toarray().ravel().tolist() for i in rows]
        reply = client.post("/predict", json={"model": self.model, "instances": instances})
        if reply.status_code != 200:
            self._count("predict", reply)
            return
        made = [
            (p["prediction_id"], int(y[i])) for p, i in zip(reply.json()["predictions"], rows, strict=True)
        ]
        twice = [{"prediction_id": pid, "label": label} for pid, label in made[: mix.duplicates]]
        if twice:
            self._post(client, "label", {"items": twice}, len(twice))
            self._post(client, "duplicate", {"items": twice}, len(twice))
        if mix.unknown:
            token = made[0][0][:-16]
            bogus = [
                {"prediction_id": token + f"{rng.getrandbits(64):016x}", "label": 1}
                for _ in range(mix.unknown)
            ]
            self._post(client, "unknown", {"items": bogus}, mix.unknown)
        for _ in range(mix.invalid):
            self._post(client, "invalid", {"prediction_id": made[-1][0], "label": 0})
        self.unlabelled.extend((now, pid, label) for pid, label in made[mix.duplicates : -mix.slow or None])
        for pid, label in made[len(made) - mix.slow :]:
            heapq.heappush(self.slow, (now + rng.uniform(2, 12), pid, label))
        due = []
        while self.slow and self.slow[0][0] <= now:
            _, pid, label = heapq.heappop(self.slow)
            due.append({"prediction_id": pid, "label": label})
        if due:
            self._post(client, "slow", {"items": due}, len(due))
        while self.unlabelled and now - self.unlabelled[0][0] > LABEL_TTL_SECONDS + 3:
            _, pid, label = self.unlabelled.pop(0)
            self.expired += 1
            if mix.late_every and self.expired % mix.late_every == 0:
                self._post(client, "late", {"prediction_id": pid, "label": label})


@contextmanager
def replay(url: str, dataset: str, model: str, rate: float, limit: int, log_path: Path) -> Iterator[None]:
    command = [
        sys.executable, "-m", "service.cli", "replay", url, dataset, "--model", model,
        "--delay", "1", "--rate", str(rate), "--loop", "--limit", str(limit),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log_path.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    log(f"acog replay {dataset} on model {model!r} at {rate:g}/s (pid {process.pid})")
    try:
        yield
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
