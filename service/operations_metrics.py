"""Operator signals of one process: the store probe, readiness, models by status, HTTP requests.

Everything here is bounded by construction: no label value comes from a client.

- ``acog_store_up`` is 1 when the store accepted the write probe of the last scrape (the probe
  ``/readyz`` makes: a throw-away ``SET`` with a 1 ms expiry), else 0;
  ``acog_store_probe_seconds`` is how long that probe took (or how long it was waited for);
- ``acog_ready`` is 1 exactly when ``/readyz`` would answer 200;
- ``acog_models{status}`` counts this process's models by status (every status is exported,
  at 0 when no model has it, so that ``acog_models{status="failed"} > 0`` has a series);
- ``acog_http_requests_total{route, method, code}`` counts HTTP requests by route template
  (:data:`UNMATCHED_ROUTE` for a path no route matches, such as a 404 or a trailing-slash
  redirect), method (:data:`OTHER_METHOD` outside :data:`METHODS`) and status code.

The probe runs when ``/metrics`` is scraped, so the gauges describe the store at scrape time.
Under ``acog serve --workers N`` the worker that answers the scrape probes, and reports its
own readiness and models; every worker holds the same models.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from model_store import StoreError

if TYPE_CHECKING:
    from .engine import Engine

PROBE_TIMEOUT_SECONDS = 2.0
"""The longest a scrape waits for the store probe (Prometheus' scrape timeout here is 4 s); a probe
that takes longer counts as the store being down."""
UNMATCHED_ROUTE = "_unmatched"
OTHER_METHOD = "_other"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})
MODEL_STATUSES = ("recovering", "serving", "failed", "stopped")
"""Every value of :class:`service.engine.replica.Status`."""


def method_label(method: str) -> str:
    """The ``method`` label: one of :data:`METHODS`, else :data:`OTHER_METHOD`."""
    return method if method in METHODS else OTHER_METHOD


@dataclass(frozen=True, slots=True)
class Readiness:
    """What ``/readyz`` answers: ``status`` is ``ready``, ``starting``, ``unavailable`` or
    ``store_lost``; ``store_up`` whether the store accepted the write probe; ``seconds`` how
    long the probe took."""

    status: str
    detail: str | None
    store_up: bool
    seconds: float

    @property
    def ready(self) -> bool:
        return self.status == "ready"


async def check_readiness(engine: Engine, timeout: float | None = None) -> Readiness:
    """Probe the store as ``/readyz`` does (a write that expires at once), and say whether the
    process is ready: the store keeps its data and accepts writes, and the models are loaded."""
    start = time.perf_counter()
    problem: str | None = None
    try:
        if timeout is None:
            await engine.store.check_writable()
        else:
            await asyncio.wait_for(engine.store.check_writable(), timeout)
    except StoreError as exc:
        problem = f"store refuses writes: {exc}"
    except TimeoutError:
        problem = f"store did not answer the write probe within {timeout:g} s"
    seconds = time.perf_counter() - start
    up = problem is None
    if engine.store_lost is not None:
        return Readiness("store_lost", engine.store_lost, up, seconds)
    if problem is not None:
        return Readiness("unavailable", problem, up, seconds)
    if not engine.ready:
        return Readiness("starting", "models are loading", up, seconds)
    return Readiness("ready", None, up, seconds)


class OperationsCollector(Collector):
    """The store, readiness and model-status gauges, from the last probe and the engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.last: Readiness | None = None

    async def probe(self) -> Readiness:
        self.last = await check_readiness(self.engine, PROBE_TIMEOUT_SECONDS)
        return self.last

    def collect(self) -> Iterator[Metric]:
        last = self.last
        up = GaugeMetricFamily(
            "acog_store_up", "1 when the store accepted the write probe of the last scrape, else 0."
        )
        probe = GaugeMetricFamily(
            "acog_store_probe_seconds", "Duration of the last store write probe (seconds)."
        )
        ready = GaugeMetricFamily("acog_ready", "1 when /readyz would answer 200 (ready), else 0.")
        if last is not None:
            up.add_metric([], 1.0 if last.store_up else 0.0)
            probe.add_metric([], last.seconds)
            ready.add_metric([], 1.0 if last.ready else 0.0)
        models = GaugeMetricFamily("acog_models", "Models on this process by status.", labels=["status"])
        counts = dict.fromkeys(MODEL_STATUSES, 0)
        for view in self.engine.views():
            counts[view.status] = counts.get(view.status, 0) + 1
        for status, count in counts.items():
            models.add_metric([status], count)
        yield from (up, probe, ready, models)
