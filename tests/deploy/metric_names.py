"""The metric contract: every series the service exports on ``/metrics``.

This module is the single list that the deployment files are checked against: every
metric name in the Grafana dashboard and the Prometheus alert rules must be one of
these, and the dashboard must chart each of them. A test of the running service checks
that it exports every name in :func:`required_exposed_names`.

Names are written as in PromQL. Counters carry their ``_total`` suffix (prometheus-client
adds it; declare ``Counter("acog_predictions", ...)``). Histograms are queried through
their ``_bucket`` (with ``le``), ``_sum`` and ``_count`` series. prometheus-client also
exposes a ``_created`` series for counters and histograms; it is allowed, never required.

A series about one model carries a ``model`` label, first; the operator series of the whole
process (:data:`PROCESS_WIDE`: HTTP requests, the store probe, readiness, models by status)
carry none. :data:`STANDARD_NAMES` are prometheus-client's own process and platform series,
which the dashboard may chart too (exported in single-process mode only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["counter", "gauge", "histogram"]

HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


@dataclass(frozen=True)
class Metric:
    name: str
    kind: Kind
    labels: tuple[str, ...]
    help: str


CONTRACT: tuple[Metric, ...] = (
    # counters
    Metric(
        "acog_predictions_total",
        "counter",
        ("model", "predicted"),
        "Predictions answered, by predicted class (anomaly = +1, normal = -1).",
    ),
    Metric("acog_labels_total", "counter", ("model", "class"), "Labels applied, by true class."),
    Metric(
        "acog_mistakes_total",
        "counter",
        ("model", "class"),
        "Labelled predictions that were wrong, by true class.",
    ),
    Metric("acog_updates_total", "counter", ("model",), "Learner updates applied."),
    Metric(
        "acog_challenger_labels_total",
        "counter",
        ("model", "challenger"),
        "Labels a challenger learned.",
    ),
    Metric(
        "acog_challenger_weighted_sum",
        "gauge",
        ("model", "challenger"),
        "A challenger's running weighted sum (prequential).",
    ),
    Metric(
        "acog_challenger_weighted_cost",
        "gauge",
        ("model", "challenger"),
        "A challenger's running weighted cost (prequential).",
    ),
    Metric(
        "acog_challenger_agreement",
        "gauge",
        ("model", "challenger"),
        "Share of this process's predictions a challenger, scoring in shadow, labelled as the model did.",
    ),
    Metric(
        "acog_drift_total",
        "counter",
        ("model",),
        "Drifts the model's detector signalled on its online loss.",
    ),
    Metric(
        "acog_labels_rejected_total",
        "counter",
        ("model", "reason"),
        "Labels refused (unknown or expired prediction id, duplicate, invalid), by reason.",
    ),
    Metric(
        "acog_pending_expired_total",
        "counter",
        ("model",),
        "Pending predictions that expired before their label arrived.",
    ),
    Metric(
        "acog_predictions_rejected_total",
        "counter",
        ("model", "reason"),
        "Predictions refused (invalid features, pending limit), by reason.",
    ),
    Metric(
        "acog_http_requests_total",
        "counter",
        ("route", "method", "code"),
        "HTTP requests answered, by route template, method and status code.",
    ),
    # gauges
    Metric("acog_weighted_sum", "gauge", ("model",), "Running weighted sum of sensitivity and specificity."),
    Metric("acog_weighted_cost", "gauge", ("model",), "Running weighted misclassification cost."),
    Metric("acog_sensitivity", "gauge", ("model",), "Running sensitivity (true positive rate)."),
    Metric("acog_specificity", "gauge", ("model",), "Running specificity (true negative rate)."),
    Metric("acog_rho", "gauge", ("model",), "Cost trade-off rho in use by the learner."),
    Metric("acog_rho_estimate", "gauge", ("model",), "Laplace estimate of rho from the labels seen."),
    Metric("acog_model_version", "gauge", ("model",), "Version of the model in use."),
    Metric("acog_pending_predictions", "gauge", ("model",), "Predictions waiting for their label."),
    Metric("acog_checkpoint_age_seconds", "gauge", ("model",), "Seconds since the last durable checkpoint."),
    Metric("acog_eta_selected", "gauge", ("model",), "Learning rate chosen by the auto-eta ensemble."),
    Metric(
        "acog_features_registered",
        "gauge",
        ("model",),
        "Feature names registered (named schemas), else n_features.",
    ),
    Metric("acog_window_weighted_sum", "gauge", ("model", "window"), "Weighted sum over the last N labels."),
    Metric(
        "acog_window_weighted_cost", "gauge", ("model", "window"), "Weighted cost over the last N labels."
    ),
    Metric("acog_window_sensitivity", "gauge", ("model", "window"), "Sensitivity over the last N labels."),
    Metric("acog_window_specificity", "gauge", ("model", "window"), "Specificity over the last N labels."),
    Metric(
        "acog_store_up", "gauge", (), "1 when the store accepted the write probe of the last scrape, else 0."
    ),
    Metric("acog_store_probe_seconds", "gauge", (), "Duration of the last store write probe (seconds)."),
    Metric("acog_ready", "gauge", (), "1 when /readyz would answer 200 (ready), else 0."),
    Metric("acog_models", "gauge", ("status",), "Models on this process by status."),
    # histograms
    Metric(
        "acog_request_duration_seconds",
        "histogram",
        ("model", "route"),
        "Time to answer a request, by route.",
    ),
    Metric("acog_update_duration_seconds", "histogram", ("model",), "Time to apply one learner update."),
    Metric("acog_label_delay_seconds", "histogram", ("model",), "Label time minus prediction time."),
    Metric(
        "acog_missing_features_ratio",
        "histogram",
        ("model",),
        "Share of the model's registered features absent from each labelled example.",
    ),
)

METRICS: dict[str, Metric] = {metric.name: metric for metric in CONTRACT}
PROCESS_WIDE = frozenset(
    {"acog_http_requests_total", "acog_store_up", "acog_store_probe_seconds", "acog_ready", "acog_models"}
)
"""The operator series of the whole process, without a ``model`` label."""
STANDARD_NAMES = frozenset(
    {
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "python_gc_collections_total",
        "python_info",
    }
)
"""prometheus-client's process and platform collectors' series that the deployment files may use."""

# Closed label sets, plus example values for the open ones (used to build synthetic expositions).
LABEL_VALUES: dict[str, tuple[str, ...]] = {
    "predicted": ("anomaly", "normal"),
    "class": ("positive", "negative"),
    "route": ("/predict", "/feedback", "/models/{name}", "_unmatched"),
    "method": ("GET", "POST"),
    "code": ("200", "404", "503"),
    "status": ("serving", "failed"),
    "window": ("1000",),
    "reason": ("unknown_id", "expired", "duplicate"),
    "model": ("default",),
    "challenger": ("arow",),
}


def promql_names() -> frozenset[str]:
    """Every name a PromQL expression may select."""
    names: set[str] = set()
    for metric in CONTRACT:
        if metric.kind == "histogram":
            names.update(metric.name + suffix for suffix in HISTOGRAM_SUFFIXES)
        else:
            names.add(metric.name)
    return frozenset(names)


def required_exposed_names() -> frozenset[str]:
    """Every sample name the service's ``/metrics`` must contain (``_created`` series aside)."""
    return promql_names()


def allowed_exposed_names() -> frozenset[str]:
    """Every sample name ``/metrics`` may contain for the ``acog_`` prefix."""
    created = set()
    for metric in CONTRACT:
        if metric.kind == "counter":
            created.add(metric.name.removesuffix("_total") + "_created")
        elif metric.kind == "histogram":
            created.add(metric.name + "_created")
    return promql_names() | created


def base_name(series_name: str) -> str:
    """The contract name a PromQL series name belongs to (``x_bucket`` -> ``x`` for histograms)."""
    if series_name in METRICS:
        return series_name
    for suffix in HISTOGRAM_SUFFIXES:
        stem = series_name.removesuffix(suffix)
        if stem != series_name and METRICS.get(stem) and METRICS[stem].kind == "histogram":
            return stem
    raise KeyError(series_name)
