"""docker/grafana/dashboards/acog.json: loadable by Grafana's file provider, and every query is
valid PromQL over the metric contract."""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path
from typing import Any

import yaml

from .metric_names import METRICS, PROCESS_WIDE, STANDARD_NAMES, base_name, promql_names
from .promql import dashboard_queries, iter_panels, metric_names, promtool_check

ROOT = Path(__file__).resolve().parents[2]
DATASOURCES = ROOT / "docker" / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
PANEL_TYPES = {"timeseries", "stat", "row"}
PROCESS_WIDE_SERIES = frozenset(n for n in promql_names() if base_name(n) in PROCESS_WIDE)


def datasource_uid() -> str:
    (datasource,) = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    uid: str = datasource["uid"]
    return uid


def test_dashboard_has_what_provisioning_needs(dashboard: dict[str, Any]) -> None:
    assert dashboard["title"] and dashboard["uid"]
    assert len(dashboard["uid"]) <= 40  # Grafana's limit on dashboard uids
    assert dashboard["schemaVersion"] >= 36
    assert dashboard.get("id") is None  # a provisioned dashboard must not carry a database id
    assert dashboard["panels"]


def test_panels_have_unique_ids_and_non_overlapping_positions(dashboard: dict[str, Any]) -> None:
    panels = iter_panels(dashboard)
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    boxes = []
    for panel in panels:
        assert panel["type"] in PANEL_TYPES, panel["title"]
        grid = panel["gridPos"]
        assert all(isinstance(grid[key], int) for key in ("h", "w", "x", "y")), panel["title"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel[
            "title"
        ]
        boxes.append((panel["title"], grid))
    for (title_a, a), (title_b, b) in combinations(boxes, 2):
        overlap = (
            a["x"] < b["x"] + b["w"]
            and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"]
            and b["y"] < a["y"] + a["h"]
        )
        assert not overlap, f"panels {title_a!r} and {title_b!r} overlap"


def test_every_panel_and_target_uses_the_provisioned_datasource(dashboard: dict[str, Any]) -> None:
    uid = datasource_uid()
    for panel in iter_panels(dashboard):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": uid}, panel["title"]
        assert panel["targets"], panel["title"]
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == uid, panel["title"]


def test_model_variable_lists_the_models(dashboard: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    model = variables["model"]
    assert model["type"] == "query"
    assert model["datasource"]["uid"] == datasource_uid()
    assert model["query"]["query"] == model["definition"] == "label_values(acog_model_version, model)"
    assert model["multi"] and model["includeAll"]


def test_every_query_filters_on_the_model_variable(dashboard: dict[str, Any]) -> None:
    """Every selector of a series with a ``model`` label; the process-wide operator series and
    prometheus-client's own have none, and only they appear unfiltered."""
    for query in dashboard_queries(dashboard, substitute=False):
        per_model = {n for n in metric_names(query.expr) if n not in STANDARD_NAMES} - PROCESS_WIDE_SERIES
        if per_model:
            assert query.expr.count('model=~"$model"') >= len(per_model), query.source
        else:
            assert "$model" not in query.expr, query.source


def test_every_query_parses_with_promtool(dashboard: dict[str, Any], tmp_path: Path) -> None:
    queries = dashboard_queries(dashboard)  # substitution fails on an undefined variable
    assert len({q.record_name for q in queries}) == len(queries)
    result = promtool_check(queries, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(queries)} rules found" in result.stdout


def test_every_query_uses_only_contract_metrics(dashboard: dict[str, Any]) -> None:
    allowed = promql_names() | STANDARD_NAMES
    for query in dashboard_queries(dashboard):
        names = metric_names(query.expr)
        assert names, f"{query.source}: selects no metric"
        assert names <= allowed, f"{query.source}: not in the metric contract: {names - allowed}"


def test_every_contract_metric_is_charted(dashboard: dict[str, Any]) -> None:
    charted = {
        base_name(name)
        for q in dashboard_queries(dashboard)
        for name in metric_names(q.expr)
        if name not in STANDARD_NAMES
    }
    assert charted == set(METRICS), f"not on the dashboard: {sorted(set(METRICS) - charted)}"


def test_histogram_panels_take_quantiles_of_buckets_by_le(dashboard: dict[str, Any]) -> None:
    for query in dashboard_queries(dashboard):
        if "histogram_quantile" in query.expr:
            assert re.search(r"sum by \(le\b[^)]*\) \(rate\(\w+_bucket\{", query.expr), query.source
