"""Prometheus metrics (prometheus-client), fed by the engine.

A ``model`` label names a model this process serves (or holds as failed), and nothing else: a
request naming any other model is counted under :data:`UNKNOWN_MODEL`, so that clients cannot
add series by inventing names. Every other label value comes from a closed set (route
templates, reasons, classes).

Three kinds of series:

- **read from the model state at scrape time** (:class:`ModelStateCollector`): labels and
  mistakes by class (T_p, T_n, M_p, M_n), updates, the running and windowed measures, rho
  in use and its Laplace estimate, version, pending predictions, checkpoint age, the
  selected eta. Their values are the exact running values of the measures, they survive a
  restart (they come from the checkpointed state), and a replay cannot count anything twice;
- **events this process observed** (:class:`Telemetry`): predictions by predicted class,
  rejected labels by reason, expired pending predictions, and the request, update and
  label-delay histograms. Like any counter they restart from zero with the process;
- **operator signals** (:mod:`service.operations_metrics`): store up and probe time, readiness,
  models by status, HTTP requests by route, method and status code; and, in single-process
  mode, prometheus-client's ``process_*`` and ``python_*`` collectors. prometheus-client's
  multi-process mode (``acog serve --workers N``) cannot aggregate those across workers, so
  they are not exported there (see README, Observability).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from .engine import Observer
from .operations_metrics import UNMATCHED_ROUTE, OperationsCollector, Readiness, method_label

if TYPE_CHECKING:
    from .engine import Applied, Engine

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
UPDATE_BUCKETS = (1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3, 0.025, 0.1, 1.0)
UNKNOWN_MODEL = "_unknown"
"""The ``model`` label of a request naming a model this process does not hold."""
MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus-client's multi-process mode: set, counters and histograms live in files there, so that
``/metrics`` of any worker of ``acog serve --workers N`` adds up every worker's events."""


def prepare_multiprocess_metrics() -> Path:
    """Before starting workers: a clean directory for their metric files (``$PROMETHEUS_MULTIPROC_DIR``
    if set, else a new temporary one), exported to them."""
    directory = Path(os.environ.get(MULTIPROCESS_DIR) or tempfile.mkdtemp(prefix="acog-metrics-"))
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROCESS_DIR] = str(directory)
    return directory


def multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROCESS_DIR))


LAG_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
DELAY_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 86400, 7 * 86400)
CHILD_CACHE_LIMIT = 4096
"""Most labelled children :meth:`Telemetry.request_done` keeps at hand (the keys are bounded; this
bounds the raw ``method`` strings a client can send too, which the label folds into ``_other``)."""
PREDICTION_REJECTIONS = ("invalid_features", "pending_limit")
"""The reasons the engine refuses predictions for (``Observer.predictions_refused``)."""
SHARE_BUCKETS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


@dataclass(frozen=True, slots=True)
class _ModelChildren:
    """A model's labelled children of the per-event series, resolved once (``labels()`` is a
    dict lookup under a lock per call, on every prediction and every applied label)."""

    anomalies: Counter
    normals: Counter
    update_duration: Histogram
    label_delay: Histogram
    follower_lag: Histogram
    missing_share: Histogram


class Telemetry(Observer):
    """The engine's observer, and the process-local metrics."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.predictions_total = Counter(
            "acog_predictions",
            "Predictions answered, by predicted class (anomaly = +1, normal = -1).",
            ["model", "predicted"],
            registry=registry,
        )
        self.rejected_total = Counter(
            "acog_labels_rejected",
            "Labels not applied (unknown, expired, gone, duplicate, invalid), by reason.",
            ["model", "reason"],
            registry=registry,
        )
        self.features_ignored_total = Counter(
            "acog_features_ignored",
            "Feature names a model could not take (its max_features slots are all taken), by where "
            "they were met (predict, label); each request's reply names them in ignored_features.",
            ["model", "at"],
            registry=registry,
        )
        self.expired_total = Counter(
            "acog_pending_expired",
            "Pending predictions that expired before their label arrived.",
            ["model"],
            registry=registry,
        )
        self.request_duration = Histogram(
            "acog_request_duration_seconds",
            "Time to answer a request, by route.",
            ["model", "route"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.update_duration = Histogram(
            "acog_update_duration_seconds",
            "Time to apply one learner update.",
            ["model"],
            buckets=UPDATE_BUCKETS,
            registry=registry,
        )
        self.label_delay = Histogram(
            "acog_label_delay_seconds",
            "Label time minus prediction time.",
            ["model"],
            buckets=DELAY_BUCKETS,
            registry=registry,
        )
        self.follower_lag = Histogram(
            "acog_follower_lag_seconds",
            "Time from a label's acknowledgement (by any replica) to its application on this replica.",
            ["model"],
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.predictions_rejected_total = Counter(
            "acog_predictions_rejected",
            "Predictions refused (invalid features, pending limit), by reason.",
            ["model", "reason"],
            registry=registry,
        )
        self.http_requests_total = Counter(
            "acog_http_requests",
            "HTTP requests answered, by route template, method and status code.",
            ["route", "method", "code"],
            registry=registry,
        )
        self.resyncs = Counter(
            "acog_log_resyncs",
            "Gaps found in a model's log by this replica, each closed by reloading a checkpoint.",
            ["model"],
            registry=registry,
        )
        self.checkpoint_duration = Histogram(
            "acog_checkpoint_write_seconds",
            "Time to send and commit a checkpoint (on the replica holding the writer lease).",
            ["model"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.missing_share = Histogram(
            "acog_missing_features_ratio",
            "Share of the model's registered features absent from each labelled example.",
            ["model"],
            buckets=SHARE_BUCKETS,
            registry=registry,
        )
        self.engine: Engine | None = None
        self._request_counters: dict[tuple[str | None, str, int], Counter] = {}
        self._request_timers: dict[tuple[str, str], Histogram] = {}
        self._children: dict[str, _ModelChildren] = {}
        if not multiprocess():
            ProcessCollector(registry=registry)
            PlatformCollector(registry=registry)
            GCCollector(registry=registry)

    def watch(self, engine: Engine) -> None:
        self.engine = engine
        self.state = ModelStateCollector(engine)
        self.operations = OperationsCollector(engine)
        self.registry.register(self.state)
        self.registry.register(self.operations)

    def model_label(self, model: str) -> str:
        """``model`` if this process holds a model of that name, ``""`` for none, else
        :data:`UNKNOWN_MODEL`."""
        engine = self.engine
        if not model or engine is None:
            return model and UNKNOWN_MODEL
        return model if model in engine.replicas or model in engine.failed else UNKNOWN_MODEL

    def request_done(self, route: str | None, method: str, status: int, model: str, seconds: float) -> None:
        """Count an HTTP request; time it under its (bounded) model unless it is a scrape.

        The labelled children are kept in plain dicts (bounded like their labels), which is cheaper
        per request than prometheus-client's ``labels()`` lookup (``python -m bench.request_metrics``
        measures the whole middleware). A model that is removed is dropped from them, and a request
        that finishes after the removal is counted under :data:`UNKNOWN_MODEL`, so no series of a
        deleted model comes back."""
        key = (route, method, status)
        counter = self._request_counters.get(key)
        if counter is None:
            counter = self.http_requests_total.labels(
                route or UNMATCHED_ROUTE, method_label(method), str(status)
            )
            if len(self._request_counters) < CHILD_CACHE_LIMIT:
                self._request_counters[key] = counter
        counter.inc()
        if route is not None and route != "/metrics":
            timer_key = (self.model_label(model), route)
            timer = self._request_timers.get(timer_key)
            if timer is None:
                timer = self.request_duration.labels(*timer_key)
                if len(self._request_timers) < CHILD_CACHE_LIMIT:
                    self._request_timers[timer_key] = timer
            timer.observe(seconds)

    async def probe(self) -> Readiness:
        """Probe the store before a scrape (see :mod:`service.operations_metrics`)."""
        return await self.operations.probe()

    def exposition(self) -> bytes:
        """The ``/metrics`` text. Under several workers, the events of all of them (from the shared
        files) and the model state of this one (every replica holds the same)."""
        if not multiprocess():
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        registry.register(self.state)
        registry.register(self.operations)
        return generate_latest(registry)

    # --- what the engine reports ---------------------------------------------------------

    def model_added(self, model: str) -> None:
        """Create a model's series at zero, so dashboards see them before the first event, and keep
        the children the hot paths feed at hand (:meth:`_children_of`)."""
        self._children[model] = self._resolve(model)
        self.expired_total.labels(model)
        self.resyncs.labels(model)
        for reason in PREDICTION_REJECTIONS:
            self.predictions_rejected_total.labels(model, reason)

    def _resolve(self, model: str) -> _ModelChildren:
        return _ModelChildren(
            self.predictions_total.labels(model, "anomaly"),
            self.predictions_total.labels(model, "normal"),
            self.update_duration.labels(model),
            self.label_delay.labels(model),
            self.follower_lag.labels(model),
            self.missing_share.labels(model),
        )

    def _children_of(self, model: str) -> _ModelChildren:
        """The model's cached children; resolved afresh (not kept) for a model this process does
        not hold any more, as ``labels()`` would."""
        children = self._children.get(model)
        return children if children is not None else self._resolve(model)

    def model_removed(self, model: str) -> None:
        self._children.pop(model, None)
        self._request_timers = {k: v for k, v in self._request_timers.items() if k[0] != model}
        for metric in (
            self.predictions_total,
            self.rejected_total,
            self.expired_total,
            self.request_duration,
            self.update_duration,
            self.label_delay,
            self.follower_lag,
            self.predictions_rejected_total,
            self.features_ignored_total,
            self.resyncs,
            self.checkpoint_duration,
            self.missing_share,
        ):
            for labels in [key for key in metric._metrics if key[0] == model]:
                metric.remove(*labels)

    def predictions(self, model: str, anomalies: int, normals: int) -> None:
        children = self._children_of(model)
        if anomalies:
            children.anomalies.inc(anomalies)
        if normals:
            children.normals.inc(normals)

    def applied(self, model: str, applied: Applied, lag: float) -> None:
        children = self._children_of(model)
        children.update_duration.observe(applied.update_seconds)
        children.label_delay.observe(applied.delay)
        children.follower_lag.observe(lag)
        children.missing_share.observe(applied.missing_share)

    def predictions_refused(self, model: str, reason: str, count: int = 1) -> None:
        self.predictions_rejected_total.labels(model, reason).inc(count)

    def features_ignored(self, model: str, at: str, count: int) -> None:
        self.features_ignored_total.labels(model, at).inc(count)

    def resynced(self, model: str) -> None:
        self.resyncs.labels(model).inc()

    def checkpointed(self, model: str, seconds: float, nbytes: int) -> None:
        self.checkpoint_duration.labels(model).observe(seconds)

    def rejected(self, model: str, reason: str, count: int = 1) -> None:
        self.rejected_total.labels(model, reason).inc(count)

    def expired(self, model: str, count: int) -> None:
        self.expired_total.labels(model).inc(count)


class ModelStateCollector(Collector):
    """Series whose values are read from each model's state when Prometheus scrapes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        def gauge(name: str, doc: str, extra: tuple[str, ...] = ()) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=["model", *extra])

        def defined(family: GaugeMetricFamily, labels: list[str], value: float) -> None:
            """A series only once its value is defined: a ratio over no labels yet (sensitivity
            before the first positive, the weighted sum before one of each class) is absent, never NaN."""
            if math.isfinite(value):
                family.add_metric(labels, value)

        labels = CounterMetricFamily(
            "acog_labels", "Labels applied, by true class.", labels=["model", "class"]
        )
        mistakes = CounterMetricFamily(
            "acog_mistakes", "Labelled predictions that were wrong, by true class.", labels=["model", "class"]
        )
        updates = CounterMetricFamily("acog_updates", "Learner updates applied.", labels=["model"])
        drift = CounterMetricFamily(
            "acog_drift", "Drifts the model's detector signalled on its online loss.", labels=["model"]
        )
        challenger_labels = CounterMetricFamily(
            "acog_challenger_labels", "Labels a challenger learned.", labels=["model", "challenger"]
        )
        challenger_sum = gauge(
            "acog_challenger_weighted_sum",
            "A challenger's running weighted sum (prequential).",
            ("challenger",),
        )
        challenger_cost = gauge(
            "acog_challenger_weighted_cost",
            "A challenger's running weighted cost (prequential).",
            ("challenger",),
        )
        challenger_agreement = gauge(
            "acog_challenger_agreement",
            "Share of this process's predictions a challenger, scoring in shadow, labelled as the model did.",
            ("challenger",),
        )
        weighted_sum = gauge("acog_weighted_sum", "Running weighted sum of sensitivity and specificity.")
        weighted_cost = gauge("acog_weighted_cost", "Running weighted misclassification cost.")
        sensitivity = gauge("acog_sensitivity", "Running sensitivity (true positive rate).")
        specificity = gauge("acog_specificity", "Running specificity (true negative rate).")
        rho = gauge("acog_rho", "Bias rho the learner uses for the next label.")
        rho_estimate = gauge("acog_rho_estimate", "Laplace estimate alpha_p (T_n+1) / (alpha_n (T_p+1)).")
        version = gauge("acog_model_version", "Label-log entries applied to the model.")
        pending = gauge("acog_pending_predictions", "Predictions waiting for their label.")
        age = gauge("acog_checkpoint_age_seconds", "Seconds since the last durable checkpoint.")
        eta = gauge(
            "acog_eta_selected",
            "Learning rate in use (chosen online when eta is auto; absent while the forest leads the vote).",
        )
        registered = gauge(
            "acog_features_registered", "Feature names registered (named schemas), else n_features."
        )
        w_sum = gauge("acog_window_weighted_sum", "Weighted sum over the last N labels.", ("window",))
        w_cost = gauge("acog_window_weighted_cost", "Weighted cost over the last N labels.", ("window",))
        w_sens = gauge("acog_window_sensitivity", "Sensitivity over the last N labels.", ("window",))
        w_spec = gauge("acog_window_specificity", "Specificity over the last N labels.", ("window",))
        writer = gauge(
            "acog_checkpoint_writer", "1 on the replica holding the model's checkpoint-writer lease."
        )
        for view in self.engine.views():
            name, m, w = view.name, view.measures, view.window
            if m is None or w is None:
                continue
            labels.add_metric([name, "positive"], m.t_p)
            labels.add_metric([name, "negative"], m.t_n)
            mistakes.add_metric([name, "positive"], m.m_p)
            mistakes.add_metric([name, "negative"], m.m_n)
            updates.add_metric([name], view.updates)
            drift.add_metric([name], view.drift_detections)
            for c in view.challengers:
                challenger_labels.add_metric([name, c.name], c.labels)
                defined(challenger_sum, [name, c.name], c.weighted_sum)
                defined(challenger_cost, [name, c.name], c.weighted_cost)
                defined(challenger_agreement, [name, c.name], c.agreement)
            defined(weighted_sum, [name], m.weighted_sum)
            defined(weighted_cost, [name], m.weighted_cost)
            defined(sensitivity, [name], m.sensitivity)
            defined(specificity, [name], m.specificity)
            defined(rho, [name], view.rho)
            defined(rho_estimate, [name], view.rho_estimate)
            defined(version, [name], view.version)
            defined(pending, [name], view.pending_predictions or 0)
            defined(age, [name], view.checkpoint_age_seconds)
            defined(eta, [name], view.eta)
            defined(writer, [name], 1.0 if view.checkpoint_writer else 0.0)
            defined(registered, [name], view.features_registered)
            size = str(view.window_size)
            defined(w_sum, [name, size], w.weighted_sum)
            defined(w_cost, [name, size], w.weighted_cost)
            defined(w_sens, [name, size], w.sensitivity)
            defined(w_spec, [name, size], w.specificity)
        yield from (
            labels,
            mistakes,
            updates,
            drift,
            challenger_labels,
            challenger_sum,
            challenger_cost,
            challenger_agreement,
            weighted_sum,
            weighted_cost,
            sensitivity,
            specificity,
            rho,
            rho_estimate,
            version,
            pending,
            age,
            eta,
            registered,
            w_sum,
            w_cost,
            w_sens,
            w_spec,
            writer,
        )
