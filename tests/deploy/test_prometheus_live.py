"""A real Prometheus (the Debian binary) scrapes, stores and answers: the wiring of the stack.

1. A static exposition served on loopback comes back through Prometheus' query API.
2. docker/prometheus/prometheus.yml (target swapped for a loopback stand-in that exposes every
   contract series through prometheus-client) loads with its alert rules, scrapes the target,
   evaluates every rule without error, and every dashboard query returns data, with the
   values the stand-in's known rates imply.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from .metric_names import LABEL_VALUES
from .prometheus_runner import Prometheus, project_config, run_prometheus, scrape_config, serve_metrics
from .promql import alert_queries, dashboard_queries, load_dashboard
from .synthetic_metrics import ANOMALY_SHARE, ERROR_RATE, GAUGE_VALUE, SyntheticService

STATIC_EXPOSITION = b"""\
# HELP acog_weighted_sum Running weighted sum of sensitivity and specificity.
# TYPE acog_weighted_sum gauge
acog_weighted_sum{model="default"} 0.75
"""


def test_prometheus_scrapes_a_static_exposition(tmp_path: Path) -> None:
    with (
        serve_metrics(STATIC_EXPOSITION) as target,
        run_prometheus(scrape_config([target]), tmp_path) as prom,
    ):
        targets = prom.wait_for_targets_up("acog")
        assert [t["scrapeUrl"] for t in targets] == [f"http://{target}/metrics"]
        result = prom.wait_for('acog_weighted_sum{model="default"}')
    assert len(result) == 1
    assert result[0]["metric"]["__name__"] == "acog_weighted_sum"
    assert result[0]["metric"]["job"] == "acog"
    assert float(result[0]["value"][1]) == 0.75


@pytest.fixture(scope="module")
def stack_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    """Prometheus with the stack's own config, scraping the synthetic service every second."""
    service = SyntheticService()
    workdir = tmp_path_factory.mktemp("prometheus")
    with serve_metrics(service.render) as target, run_prometheus(project_config(target), workdir) as prom:
        prom.wait_for_targets_up("acog")
        # rates over the dashboard's 1m window need two samples of every counter
        prom.wait_for("rate(acog_updates_total[1m]) > 0")
        yield prom


def test_stack_config_loads_its_alert_rules(stack_prometheus: Prometheus) -> None:
    expected = {q.source.split()[1] for q in alert_queries()}
    groups = stack_prometheus.wait_for_rule_evaluation()
    rules = [rule for group in groups for rule in group["rules"]]
    assert {rule["name"] for rule in rules} == expected
    for rule in rules:
        assert rule["health"] == "ok", f"{rule['name']}: {rule.get('lastError')}"


def test_every_alert_expression_evaluates(stack_prometheus: Prometheus) -> None:
    for query in alert_queries():
        stack_prometheus.query(query.expr)  # raises on an evaluation error


def test_every_dashboard_query_returns_data(stack_prometheus: Prometheus) -> None:
    for query in dashboard_queries(load_dashboard()):
        result = stack_prometheus.wait_for(query.expr, timeout=10)
        assert result, f"{query.source}: {query.expr} returned nothing"
        for series in result:
            value = float(series["value"][1])
            assert math.isfinite(value), f"{query.source}: {query.expr} -> {series}"


def _by_source(fragment: str) -> str:
    matches = [q.expr for q in dashboard_queries(load_dashboard()) if fragment in q.source]
    assert len(matches) == 1, f"expected one query from a panel matching {fragment!r}, found {matches}"
    return matches[0]


def test_anomaly_rate_panel_is_the_share_of_anomaly_predictions(stack_prometheus: Prometheus) -> None:
    result = stack_prometheus.query(_by_source("Anomaly rate"))
    assert [r["metric"] for r in result] == [{"model": "default"}]
    assert float(result[0]["value"][1]) == pytest.approx(ANOMALY_SHARE)


def test_error_rate_panel_divides_mistakes_by_labels_per_class(stack_prometheus: Prometheus) -> None:
    result = stack_prometheus.query(_by_source("Error rate"))
    rates = {r["metric"]["class"]: float(r["value"][1]) for r in result}
    assert rates == pytest.approx(ERROR_RATE)


def test_windowed_panels_show_each_window(stack_prometheus: Prometheus) -> None:
    result = stack_prometheus.query(_by_source("'Weighted sum: running and windowed' target B"))
    assert {r["metric"]["window"] for r in result} == set(LABEL_VALUES["window"])
    assert all(float(r["value"][1]) == GAUGE_VALUE for r in result)


def test_latency_panels_group_quantiles_by_route(stack_prometheus: Prometheus) -> None:
    result = stack_prometheus.query(_by_source("'Request latency p50 / p99' target B"))
    assert {r["metric"]["route"] for r in result} == {"/predict", "/feedback"}
    for series in result:  # every request observes 0.02 s and 0.3 s: p99 lies in the 0.3 s bucket
        assert 0.25 < float(series["value"][1]) <= 0.5
