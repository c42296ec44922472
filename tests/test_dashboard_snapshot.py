"""The dashboard snapshot renderer (docs/dashboard/render.py and its snapshot package), offline.

The live run (service, Prometheus, traffic, Chromium) is the script's own job; these tests
check that it lays out exactly the dashboard's panels on Grafana's grid and that a canned
Prometheus ``query_range`` answer becomes a panel with the series Grafana would show.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
RENDER = ROOT / "docs" / "dashboard" / "render.py"
PACKAGE = ROOT / "docs" / "dashboard" / "snapshot"
DASHBOARD = ROOT / "docker" / "grafana" / "dashboards" / "acog.json"


@pytest.fixture(scope="module")
def render() -> ModuleType:
    """The ``snapshot`` package behind render.py, imported under a private name (both are part of
    the repository: their absence is a failure, not a reason to skip)."""
    assert RENDER.exists(), f"{RENDER} is missing"
    assert (PACKAGE / "__init__.py").exists(), f"{PACKAGE} is missing"
    spec = importlib.util.spec_from_file_location(
        "acog_dashboard_snapshot", PACKAGE / "__init__.py", submodule_search_locations=[str(PACKAGE)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and the package's relative imports look it up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def matrix(*series: tuple[dict[str, str], list[tuple[float, str]]]) -> dict[str, Any]:
    """A ``query_range`` answer as Prometheus sends it."""
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": labels, "values": [[t, v] for t, v in points]} for labels, points in series
            ],
        },
    }


def panel(dashboard: dict[str, Any], title: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in dashboard["panels"] if p.get("title") == title)
    return found


START = 1_700_000_000.0
POINTS = [(START + 2 * i, f"{0.5 + 0.01 * i}") for i in range(46)]


class Sections(HTMLParser):
    """Collects each panel element's data attributes and inline style."""

    def __init__(self) -> None:
        super().__init__()
        self.panels: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "data-panel-id" in found:
            self.panels.append(found)


def test_layout_is_exactly_the_dashboards_panels(render: ModuleType, dashboard: dict[str, Any]) -> None:
    boxes = render.layout(dashboard)
    expected = [
        (p["id"], p["title"], p["type"], p["gridPos"]) for p in render.all_panels(dashboard)
    ]  # every panel, rows included, in order
    assert [(b.id, b.title, b.type, {"h": b.h, "w": b.w, "x": b.x, "y": b.y}) for b in boxes] == expected
    assert len({b.id for b in boxes}) == len(boxes)
    inner = render.PAGE_WIDTH - 2 * render.PAGE_PADDING
    for box in boxes:
        assert box.left >= render.PAGE_PADDING and box.left + box.width <= render.PAGE_PADDING + inner + 1
        assert box.height == 30 * box.h + 8 * (box.h - 1)
        if box.w == 24:
            assert box.width == inner
    for a in boxes:  # no two panels overlap on the page
        for b in boxes:
            if a.id < b.id:
                apart = (
                    a.left + a.width <= b.left
                    or b.left + b.width <= a.left
                    or a.top + a.height <= b.top
                    or b.top + b.height <= a.top
                )
                assert apart, (a.title, b.title)


def test_legend_format_names_series_as_grafana(render: ModuleType) -> None:
    labels = {"__name__": "acog_window_weighted_sum", "model": "default", "window": "1000"}
    assert render.legend_name("{{model}} last {{window}}", labels) == "default last 1000"
    assert render.legend_name("{{ model }} {{class}}", labels) == "default"  # a missing label is empty
    assert render.legend_name("", labels) == 'acog_window_weighted_sum{model="default", window="1000"}'


def test_canned_query_range_becomes_a_timeseries_panel(render: ModuleType, dashboard: dict[str, Any]) -> None:
    target = panel(dashboard, "Weighted sum: running and windowed")
    gap = [*POINTS[:10], *POINTS[20:]]  # 20 s without samples: the line breaks there
    answers = [
        matrix(
            ({"__name__": "acog_weighted_sum", "model": "breast_cancer"}, POINTS), ({"model": "default"}, gap)
        ),
        matrix(({"model": "default", "window": "1000"}, [(t, "NaN") for t, _ in POINTS[:3]] + POINTS[3:])),
    ]
    series = [
        s
        for t, answer in zip(target["targets"], answers, strict=True)
        for s in render.series_from_response(answer, t["legendFormat"])
    ]
    assert [s.name for s in series] == ["breast_cancer running", "default running", "default last 1000"]
    assert series[2].points[0][1] is None and series[2].last() == pytest.approx(0.95)
    box = next(b for b in render.layout(dashboard) if b.id == target["id"])
    html = render.render_panel(box, series, START, START + 90, 2.0)
    lines = re.findall(r'<polyline [^>]*data-series="([^"]+)"', html)
    assert lines == ["breast_cancer running", "default running", "default running", "default last 1000"]
    assert html.count('class="legend-item"') == 3
    assert "Weighted sum: running and windowed" in html
    assert ">1.0<" in html and ">0.0<" in html  # the panel's min 0 and max 1 are the axis ends
    assert "No data" not in html


def test_stat_panel_is_a_big_number_coloured_by_thresholds(
    render: ModuleType, dashboard: dict[str, Any]
) -> None:
    target = panel(dashboard, "Weighted sum")
    good = render.Series("breast_cancer", ((START, 0.7), (START + 2, 0.9)))
    poor = render.Series("default", ((START, 0.5), (START + 2, 0.55)))
    box = next(b for b in render.layout(dashboard) if b.id == target["id"])
    html = render.render_panel(box, [good, poor], START, START + 2, 2.0)
    assert re.search(r'color:#73BF69;font-size:\d+px">0\.900<', html)  # green from 0.8
    assert re.search(r'color:#F2495C;font-size:\d+px">0\.550<', html)  # red below 0.6
    assert html.count('class="stat-name"') == 2 and html.count('class="spark"') == 2
    assert "No data" in render.render_panel(box, [], START, START + 2, 2.0)


def test_units_as_grafana_shows_them(render: ModuleType) -> None:
    assert render.format_value(0.8123, "percentunit") == "81.2%"
    assert render.format_value(0.25, "percentunit", 0) == "25%"
    assert render.format_value(0.0042, "s") == "4.2 ms"
    assert render.format_value(12.3, "s") == "12.3 s"
    assert render.format_value(30, "reqps", 0) == "30 req/s"
    assert render.format_value(0.5, "ops", 1) == "0.5 ops/s"
    assert render.format_value(47.5, "none", 3) == "47.500"
    assert render.format_value(None, "none") == "No data"
    assert render.format_value(512, "bytes") == "512 B"
    assert render.format_value(150 * 2**20, "bytes") == "150 MiB"
    assert render.nice_ticks(0, 1, 4) == [0, 0.25, 0.5, 0.75, 1]


def test_intervals_and_variables_as_grafana_computes_them(
    render: ModuleType, dashboard: dict[str, Any]
) -> None:
    assert render.grafana_interval(90, 500, 2) == 2
    assert render.grafana_interval(3600, 500, 2) == 5
    assert render.rate_interval(2, 2) == 8
    model = render.all_value(["default", "breast_cancer"])
    assert model == "(breast_cancer|default)"
    variables = {"model": model, "__interval": "2s", "__rate_interval": "8s"}
    for p in render.all_panels(dashboard):
        raw = [t["expr"] for t in p.get("targets", [])]
        for (_, expr, _), before in zip(render.panel_exprs(p, variables), raw, strict=True):
            assert "$" not in expr, expr
            if "$model" in before:  # the process-wide operator panels have no model to filter on
                assert 'model=~"(breast_cancer|default)"' in expr


def test_page_has_every_panel_once_and_saved_data_redraws_it(
    render: ModuleType, dashboard: dict[str, Any], tmp_path: Path
) -> None:
    series = {
        p["id"]: [render.Series(f"{p['id']} {i}", tuple((t, float(v)) for t, v in POINTS)) for i in range(2)]
        for p in render.all_panels(dashboard)
        if p.get("targets")
    }
    data = render.RenderInput(dashboard, series, START, START + 90, 2.0, {"model": "All"})
    page = render.render_page(data)
    parser = Sections()
    parser.feed(page)
    assert [int(str(p["data-panel-id"])) for p in parser.panels] == [p["id"] for p in dashboard["panels"]]
    assert "No data" not in page
    saved = tmp_path / "data.json"
    render.save_data(data, saved)
    assert render.render_page(render.read_data(saved, dashboard)) == page


def test_render_py_is_the_entry_point_of_the_package() -> None:
    """The README's command still parses: render.py hands its arguments to the package's cli."""
    result = subprocess.run(
        [sys.executable, str(RENDER), "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "--seconds" in result.stdout and "--data" in result.stdout and "--save-data" in result.stdout
