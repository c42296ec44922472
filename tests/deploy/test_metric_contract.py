"""The metric contract itself: well-formed names, and prometheus-client exposes exactly them."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from .metric_names import (
    CONTRACT,
    HISTOGRAM_SUFFIXES,
    LABEL_VALUES,
    METRICS,
    PROCESS_WIDE,
    STANDARD_NAMES,
    allowed_exposed_names,
    base_name,
    promql_names,
    required_exposed_names,
)
from .synthetic_metrics import SyntheticService


def test_names_follow_prometheus_conventions() -> None:
    assert len(METRICS) == len(CONTRACT), "duplicate metric names"
    for metric in CONTRACT:
        assert re.fullmatch(r"acog_[a-z][a-z0-9_]*", metric.name), metric.name
        assert metric.name.endswith("_total") == (metric.kind == "counter"), metric.name
        if metric.kind == "histogram":
            assert metric.name.endswith(("_seconds", "_ratio")), (
                f"{metric.name}: histograms measure seconds or shares"
            )
        if metric.kind != "gauge":
            assert not metric.name.endswith(HISTOGRAM_SUFFIXES), metric.name
    # a gauge may end in _sum (acog_weighted_sum) but must not collide with a histogram's series
    histogram_series = {m.name + s for m in CONTRACT if m.kind == "histogram" for s in HISTOGRAM_SUFFIXES}
    assert not histogram_series & set(METRICS)


def test_every_series_has_a_model_label_and_known_label_values() -> None:
    """A model's series has ``model`` first; only the process-wide operator series have none."""
    for metric in CONTRACT:
        if metric.name in PROCESS_WIDE:
            assert "model" not in metric.labels, metric.name
        else:
            assert metric.labels[0] == "model", metric.name
        assert "le" not in metric.labels, metric.name
        for label in metric.labels:
            assert LABEL_VALUES.get(label), f"{metric.name}: no example values for label {label!r}"


def test_the_contract_names_the_series_the_brief_asks_for() -> None:
    assert METRICS["acog_predictions_total"].labels == ("model", "predicted")
    assert LABEL_VALUES["predicted"] == ("anomaly", "normal")
    assert LABEL_VALUES["class"] == ("positive", "negative")
    for name in (
        "acog_window_weighted_sum",
        "acog_window_weighted_cost",
        "acog_window_sensitivity",
        "acog_window_specificity",
    ):
        assert METRICS[name].labels == ("model", "window")
    assert METRICS["acog_request_duration_seconds"].labels == ("model", "route")
    assert {m.kind for m in CONTRACT} == {"counter", "gauge", "histogram"}
    assert METRICS["acog_http_requests_total"].labels == ("route", "method", "code")
    assert METRICS["acog_predictions_rejected_total"].labels == ("model", "reason")
    assert METRICS["acog_models"].labels == ("status",)
    assert set(METRICS) >= PROCESS_WIDE


def test_base_name_maps_histogram_series_back() -> None:
    assert base_name("acog_label_delay_seconds_bucket") == "acog_label_delay_seconds"
    assert base_name("acog_updates_total") == "acog_updates_total"
    for bad in ("acog_updates_total_count", "acog_weighted_sum_bucket", "up"):
        try:
            base_name(bad)
        except KeyError:
            continue
        raise AssertionError(f"{bad} should not map to a contract metric")


def test_prometheus_client_exposes_exactly_the_contract_names() -> None:
    """The synthetic service (prometheus-client, as the real one) exposes every name and no other."""
    payload, _ = SyntheticService().render("text/plain")
    exposition = payload.decode()
    samples = [s for family in text_string_to_metric_families(exposition) for s in family.samples]
    names = {s.name for s in samples}
    assert required_exposed_names() <= names
    assert {n for n in names if n.startswith("acog_")} <= allowed_exposed_names()
    assert names >= STANDARD_NAMES
    for sample in samples:
        if not sample.name.startswith("acog_"):
            continue
        metric = METRICS[base_name(sample.name)] if not sample.name.endswith("_created") else None
        if metric is None:
            continue
        expected = set(metric.labels) | ({"le"} if sample.name.endswith("_bucket") else set())
        assert set(sample.labels) == expected, sample
    assert promql_names() == required_exposed_names()
