"""Render the provisioned Grafana dashboard's panels from a live run, without Grafana.

Grafana cannot be installed on the development machines (no registry we can reach ships a
``grafana-server``), so this script shows the same panels' data the way Grafana would:

1. starts the real service (``python -m service.cli serve``) on a private Redis, with a
   default model (24 features, german's dimension);
2. starts a real Prometheus with the stack's own config (``docker/prometheus/prometheus.yml``,
   the compose target replaced by the service, scraping every ``SCRAPE_SECONDS``);
3. drives traffic for ``--seconds``: ``acog replay`` of german on ``default`` and of
   ``sklearn:breast_cancer`` on a second model, plus a trickle of bad labels (duplicates,
   unknown ids, an invalid label value, predictions left to expire) so that the rejection
   panel has data;
4. for every panel of ``docker/grafana/dashboards/acog.json``: substitutes the template
   variables (``$model`` = All, ``$__rate_interval`` as Grafana computes it), runs each
   target's ``expr`` with Prometheus' ``query_range`` over the run, and draws the panel
   (title, series named by the target's ``legendFormat``, units, stat panels as big numbers
   with a sparkline) as inline SVG on the dashboard's 24-column ``gridPos`` grid, dark theme;
5. screenshots the page with headless Chromium (Debian's ``chromium``).

Run from the repository root::

    .venv/bin/python docs/dashboard/render.py [--seconds 90] [--output docs/dashboard/acog-dashboard.png]

The page is written next to the PNG (same name, ``.html``). The drawing functions are pure
and tested without network or browser by ``tests/test_dashboard_snapshot.py``.
"""

from __future__ import annotations

import argparse
import heapq
import html
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docker" / "grafana" / "dashboards" / "acog.json"
DEFAULT_OUTPUT = ROOT / "docs" / "dashboard" / "acog-dashboard.png"

SCRAPE_SECONDS = 2  # Prometheus scrape interval, also the datasource's minimum interval
SECOND_MODEL = "breast_cancer"
LABEL_TTL_SECONDS = 15  # short, so that unlabelled predictions expire during the run

# --- Grafana's look (dark theme, v10/v11) ------------------------------------------------
PAGE_WIDTH = 1600
PAGE_PADDING = 16
GRID_COLUMNS = 24
GRID_CELL_HEIGHT = 30
GRID_MARGIN = 8
HEADER_HEIGHT = 96  # the top bar and the variables bar above the grid
ROW_HEIGHT = GRID_CELL_HEIGHT

BG_CANVAS = "#111217"
BG_PANEL = "#181b1f"
BORDER = "rgba(204, 204, 220, 0.12)"
TEXT = "#ccccdc"
TEXT_WEAK = "rgba(204, 204, 220, 0.65)"
GRID_LINE = "rgba(204, 204, 220, 0.10)"
NAMED_COLORS = {
    "green": "#73BF69",
    "red": "#F2495C",
    "orange": "#FF9830",
    "yellow": "#FADE2A",
    "blue": "#5794F2",
    "purple": "#B877D9",
    "text": TEXT,
}
# Grafana's "palette-classic" colour scheme, in order.
CLASSIC_PALETTE = (
    "#7EB26D", "#EAB839", "#6ED0E0", "#EF843C", "#E24D42", "#1F78C1", "#BA43A9", "#705DA0",
    "#508642", "#CCA300", "#447EBC", "#C15C17", "#890F02", "#0A437C", "#6D1F62", "#584477",
)  # fmt: skip

# Grafana's interval rounding (kbn.roundInterval), as (upper bound, rounded) in seconds.
_ROUND_INTERVALS = (
    (1.5, 1), (3.5, 2), (7.5, 5), (12.5, 10), (17.5, 15), (25, 20), (45, 30), (90, 60),
    (210, 120), (450, 300), (750, 600), (1050, 900), (1500, 1200), (2700, 1800), (5400, 3600),
)  # fmt: skip

_LEGEND_VARIABLE = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")


# --- the dashboard ------------------------------------------------------------------------


@dataclass(frozen=True)
class PanelBox:
    """A panel and where Grafana puts it: ``x, y, w, h`` in grid units, ``left`` ... in pixels."""

    id: int
    type: str
    title: str
    x: int
    y: int
    w: int
    h: int
    left: int
    top: int
    width: int
    height: int
    panel: dict[str, Any] = field(repr=False, compare=False)


def load_dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(path.read_text())
    return dashboard


def all_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, including those nested in collapsed rows, in the dashboard's order."""
    panels: list[dict[str, Any]] = []
    for panel in dashboard.get("panels", []):
        panels.append(panel)
        panels.extend(panel.get("panels", []))
    return panels


def layout(dashboard: dict[str, Any], page_width: int = PAGE_WIDTH) -> list[PanelBox]:
    """Pixel boxes on Grafana's grid (react-grid-layout: 24 columns, 30 px rows, 8 px gaps)."""
    inner = page_width - 2 * PAGE_PADDING
    column = (inner - GRID_MARGIN * (GRID_COLUMNS - 1)) / GRID_COLUMNS
    boxes = []
    for panel in all_panels(dashboard):
        grid = panel["gridPos"]
        x, y, w, h = int(grid["x"]), int(grid["y"]), int(grid["w"]), int(grid["h"])
        boxes.append(
            PanelBox(
                id=int(panel["id"]),
                type=str(panel.get("type", "")),
                title=str(panel.get("title", "")),
                x=x,
                y=y,
                w=w,
                h=h,
                left=PAGE_PADDING + round((column + GRID_MARGIN) * x),
                top=HEADER_HEIGHT + (GRID_CELL_HEIGHT + GRID_MARGIN) * y,
                width=round(column * w + GRID_MARGIN * (w - 1)),
                height=GRID_CELL_HEIGHT * h + GRID_MARGIN * (h - 1),
                panel=panel,
            )
        )
    return boxes


def page_height(boxes: Sequence[PanelBox]) -> int:
    return max((b.top + b.height for b in boxes), default=HEADER_HEIGHT) + PAGE_PADDING + 24


# --- queries ------------------------------------------------------------------------------


def round_interval(seconds: float) -> int:
    """Grafana's rounding of a computed interval to a readable one."""
    for bound, rounded in _ROUND_INTERVALS:
        if seconds < bound:
            return rounded
    return 3600 * max(1, round(seconds / 3600))


def grafana_interval(range_seconds: float, width_px: int, min_interval: float) -> int:
    """``$__interval`` of a panel: the range over its width in pixels, no less than the minimum."""
    return max(round_interval(range_seconds / max(1, width_px)), math.ceil(min_interval))


def rate_interval(interval: float, scrape: float) -> int:
    """``$__rate_interval = max($__interval + scrape interval, 4 * scrape interval)``."""
    return int(max(interval + scrape, 4 * scrape))


def all_value(values: Sequence[str]) -> str:
    """A multi-value variable set to All, as Grafana formats it for a Prometheus regex."""
    escaped = [re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\\\1", v) for v in sorted(values)]
    return "(" + "|".join(escaped) + ")" if len(escaped) != 1 else escaped[0]


def _repo_on_path() -> None:
    """The repository root on ``sys.path``: the test support modules are reused from there."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def panel_exprs(panel: dict[str, Any], variables: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(refId, substituted expr, legendFormat)`` for each target of ``panel``."""
    _repo_on_path()
    from tests.deploy.promql import substitute_variables

    return [
        (
            str(t.get("refId", "A")),
            substitute_variables(str(t["expr"]), variables),
            str(t.get("legendFormat", "")),
        )
        for t in panel.get("targets", [])
        if t.get("expr") and not t.get("hide")
    ]


# --- series -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    name: str
    points: tuple[tuple[float, float | None], ...]  # (unix seconds, value or None for a gap)

    def values(self) -> list[float]:
        return [v for _, v in self.points if v is not None]

    def last(self) -> float | None:
        values = self.values()
        return values[-1] if values else None


def legend_name(legend_format: str, labels: dict[str, str]) -> str:
    """The series name Grafana shows: ``{{label}}`` filled in, else the metric with its labels."""
    if legend_format and legend_format != "__auto":
        return _LEGEND_VARIABLE.sub(lambda m: labels.get(m.group(1), ""), legend_format).strip()
    name = labels.get("__name__", "")
    rest = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
    return f"{name}{{{rest}}}" if rest or not name else name


def _number(raw: Any) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def series_from_response(response: dict[str, Any], legend_format: str) -> list[Series]:
    """Series of a ``query_range`` answer (the whole JSON or its ``data``), named as Grafana would."""
    data = response.get("data", response)
    if data.get("resultType") != "matrix":
        raise ValueError(f"expected a matrix from query_range, got {data.get('resultType')!r}")
    series = []
    for item in data.get("result", []):
        points = tuple((float(t), _number(v)) for t, v in item.get("values", []))
        series.append(Series(legend_name(legend_format, item.get("metric", {})), points))
    return series


# --- units and numbers --------------------------------------------------------------------


def _auto_decimals(value: float) -> int:
    if value == 0 or not math.isfinite(value):
        return 0
    return max(0, min(4, 2 - math.floor(math.log10(abs(value)))))


def _fixed(value: float, decimals: int | None) -> str:
    text = f"{value:.{_auto_decimals(value) if decimals is None else decimals}f}"
    if decimals is None and "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def format_value(value: float | None, unit: str | None, decimals: int | None = None) -> str:
    """A value as Grafana shows it in ``unit`` (none, percentunit, s, reqps, ops, ...)."""
    if value is None:
        return "No data"
    if unit == "percentunit":
        return f"{_fixed(value * 100, decimals)}%"
    if unit == "percent":
        return f"{_fixed(value, decimals)}%"
    if unit == "s":
        magnitude = abs(value)
        if magnitude == 0:
            return "0 s"
        if magnitude < 1e-3:
            return f"{_fixed(value * 1e6, decimals)} µs"
        if magnitude < 1:
            return f"{_fixed(value * 1e3, decimals)} ms"
        if magnitude < 60:
            return f"{_fixed(value, decimals)} s"
        if magnitude < 3600:
            return f"{_fixed(value / 60, decimals)} min"
        return f"{_fixed(value / 3600, decimals)} hour"
    suffix = {"reqps": " req/s", "ops": " ops/s", "rps": " rd/s", "wps": " wr/s"}.get(unit or "", "")
    return f"{_fixed(value, decimals)}{suffix}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]`` (about ``count`` of them)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9) * step
    ticks: list[float] = []
    value = first
    while value <= high + step * 1e-6 and len(ticks) < 50:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high - step * 1e-6:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def axis_range(
    values: Sequence[float], fixed_min: float | None, fixed_max: float | None, count: int = 4
) -> list[float]:
    """The y ticks of a panel: its ``min``/``max`` if set, else a round range around the data."""
    data_low, data_high = min(values, default=0.0), max(values, default=1.0)
    pad = 0.1 * ((data_high - data_low) or abs(data_high) or 1.0)  # uPlot pads a free side by 10 %
    low = fixed_min if fixed_min is not None else data_low - pad
    high = fixed_max if fixed_max is not None else data_high + pad
    if fixed_min is None and data_low >= 0 > low:
        low = 0.0
    if fixed_max is None and fixed_min is not None and high <= low:
        high = low + 1.0
    ticks = nice_ticks(low, high, count)
    if fixed_min is not None:
        ticks = [t for t in ticks if t >= fixed_min - 1e-12] or [fixed_min]
        if ticks[0] > fixed_min:
            ticks.insert(0, fixed_min)
    if fixed_max is not None:
        ticks = [t for t in ticks if t <= fixed_max + 1e-12]
        if ticks[-1] < fixed_max:
            ticks.append(fixed_max)
    return ticks


def _tick_decimals(ticks: Sequence[float], unit: str | None) -> int:
    """The fewest decimals that show every tick exactly, in the unit's displayed scale."""
    scale = 100.0 if unit == "percentunit" else 1.0
    if unit == "s" and ticks and max(abs(t) for t in ticks) < 1:
        scale = 1000.0  # shown in ms
    for decimals in range(5):
        if all(abs(round(t * scale, decimals) - t * scale) < 1e-9 for t in ticks):
            return decimals
    return 4


def time_ticks(start: float, end: float, width_px: int) -> list[float]:
    """Round wall-clock times across ``[start, end]``, about one per 90 px."""
    wanted = max(2, width_px // 90)
    span = max(1.0, end - start)
    step = next(
        (s for s in (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600) if span / s <= wanted),
        3600,
    )
    first = math.ceil(start / step) * step
    return [float(t) for t in range(int(first), int(end) + 1, step)]


def _clock(ts: float, step_hint: float) -> str:
    moment = datetime.fromtimestamp(ts)
    return moment.strftime("%H:%M:%S" if step_hint < 60 else "%H:%M")


def threshold_color(panel: dict[str, Any], value: float | None) -> str:
    """The colour of the highest threshold step at or below ``value`` (Grafana's stat colouring)."""
    steps = panel.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps") or []
    color = "green"
    for step in steps:
        if step.get("value") is None or (value is not None and value >= float(step["value"])):
            color = str(step.get("color", color))
    return NAMED_COLORS.get(color, color)


# --- drawing ------------------------------------------------------------------------------

PANEL_HEADER = 32
PANEL_PAD = 8
LEGEND_LINE = 20
Y_AXIS_WIDTH = 58
X_AXIS_HEIGHT = 20


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _paths(
    points: Sequence[tuple[float, float | None]], sx: Any, sy: Any, max_gap: float
) -> Iterator[list[tuple[float, float]]]:
    """Polyline runs of a series, broken at gaps (``spanNulls: false``) and at missing samples."""
    run: list[tuple[float, float]] = []
    previous: float | None = None
    for t, v in points:
        if v is None or (previous is not None and t - previous > max_gap):
            if run:
                yield run
            run = []
        if v is not None:
            run.append((sx(t), sy(v)))
        previous = t
    if run:
        yield run


def _legend_lines(names: Sequence[str], width: int, char_px: float = 7.0) -> int:
    lines, used = 1, 0.0
    for name in names:
        item = 26 + len(name) * char_px
        if used and used + item > width:
            lines, used = lines + 1, 0.0
        used += item
    return lines


def render_timeseries(
    panel: dict[str, Any], series: Sequence[Series], width: int, height: int, start: float, end: float,
    step: float,
) -> str:  # fmt: skip
    """The body of a time series panel: an SVG plot and a bottom legend (list mode)."""
    defaults = panel.get("fieldConfig", {}).get("defaults", {})
    unit = defaults.get("unit")
    custom = defaults.get("custom", {})
    line_width = float(custom.get("lineWidth", 1))
    fill = float(custom.get("fillOpacity", 0)) / 100
    names = [s.name for s in series]
    legend = panel.get("options", {}).get("legend", {})
    show_legend = legend.get("showLegend", True) and bool(series)
    legend_height = _legend_lines(names, width - 2 * PANEL_PAD) * LEGEND_LINE + 6 if show_legend else 0
    plot_h = max(40, height - legend_height)
    if not series:
        return f'<div class="nodata" style="height:{height}px">No data</div>'
    values = [v for s in series for v in s.values()]
    fixed_min = _number(defaults.get("min")) if "min" in defaults else None
    fixed_max = _number(defaults.get("max")) if "max" in defaults else None
    x0, x1 = Y_AXIS_WIDTH, width - 10
    y0, y1 = 6, plot_h - X_AXIS_HEIGHT
    ticks = axis_range(values, fixed_min, fixed_max, count=max(2, (y1 - y0) // 32))
    low, high = ticks[0], ticks[-1]
    tick_decimals = _tick_decimals(ticks, unit)

    def sx(t: float) -> float:
        return x0 + (t - start) / max(1e-9, end - start) * (x1 - x0)

    def sy(v: float) -> float:
        v = min(max(v, low), high)
        return y1 - (v - low) / max(1e-12, high - low) * (y1 - y0)

    parts = [f'<svg class="plot" width="{width}" height="{plot_h}" viewBox="0 0 {width} {plot_h}">']
    for tick in ticks:
        y = sy(tick)
        parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID_LINE}"/>')
        label = format_value(tick, unit, tick_decimals)
        parts.append(
            f'<text x="{x0 - 8}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_esc(label)}</text>'
        )
    times = time_ticks(start, end, x1 - x0)
    step_hint = times[1] - times[0] if len(times) > 1 else 60.0
    for t in times:
        x = sx(t)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y0}" y2="{y1}" stroke="{GRID_LINE}"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{y1 + 15}" text-anchor="middle" class="tick">{_clock(t, step_hint)}</text>'
        )
    for index, s in enumerate(series):
        color = CLASSIC_PALETTE[index % len(CLASSIC_PALETTE)]
        for run in _paths(s.points, sx, sy, max_gap=step * 1.5):
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            if len(run) == 1:
                x, y = run[0]
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="1.5" fill="{color}"/>')
                continue
            if fill > 0:
                area = f"{run[0][0]:.1f},{y1} {coords} {run[-1][0]:.1f},{y1}"
                parts.append(f'<polygon points="{area}" fill="{color}" fill-opacity="{fill}"/>')
            parts.append(
                f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="{line_width}" '
                f'stroke-linejoin="round" data-series="{_esc(s.name)}"/>'
            )
    parts.append("</svg>")
    if show_legend:
        items = "".join(
            f'<span class="legend-item"><i style="background:{CLASSIC_PALETTE[i % len(CLASSIC_PALETTE)]}">'
            f"</i>{_esc(name)}</span>"
            for i, name in enumerate(names)
        )
        parts.append(f'<div class="legend">{items}</div>')
    return "".join(parts)


def _sparkline(series: Series, width: int, height: int, color: str) -> str:
    values = series.values()
    if len(values) < 2:
        return ""
    times = [t for t, v in series.points if v is not None]
    low, high = min(values), max(values)
    span = high - low or 1.0
    t0, t1 = times[0], times[-1] if times[-1] > times[0] else times[0] + 1
    pts = [
        (
            (t - t0) / (t1 - t0) * width,
            height - 2 - (v - low) / span * (height * 0.8 - 2) if high > low else height * 0.6,
        )
        for t, v in zip(times, values, strict=True)
    ]
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'<polygon points="0,{height} {coords} {width},{height}" fill="{color}" fill-opacity="0.18"/>'
        f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1"/></svg>'
    )


def render_stat(panel: dict[str, Any], series: Sequence[Series], width: int, height: int) -> str:
    """The body of a stat panel: one big last value per series (name above when several)."""
    if not series:
        return f'<div class="nodata" style="height:{height}px">No data</div>'
    defaults = panel.get("fieldConfig", {}).get("defaults", {})
    unit = defaults.get("unit")
    decimals = defaults.get("decimals")
    graph = panel.get("options", {}).get("graphMode", "area") == "area"
    color_mode = panel.get("options", {}).get("colorMode", "value")
    cell_w = (width - 8 * (len(series) - 1)) // len(series)
    font = max(18, min(44, int(height * 0.42), int(cell_w / 5.5)))
    cells = []
    for s in series:
        value = s.last()
        color = threshold_color(panel, value)
        text_color = color if color_mode == "value" else TEXT
        spark = _sparkline(s, cell_w, int(height * 0.55), color) if graph else ""
        name = f'<div class="stat-name">{_esc(s.name)}</div>' if len(series) > 1 else ""
        cells.append(
            f'<div class="stat" style="width:{cell_w}px;height:{height}px">{spark}{name}'
            f'<div class="stat-value" style="color:{text_color};font-size:{font}px">'
            f"{_esc(format_value(value, unit, decimals))}</div></div>"
        )
    return f'<div class="stats">{"".join(cells)}</div>'


def render_panel(
    box: PanelBox, series: Sequence[Series], start: float, end: float, step: float, error: str | None = None
) -> str:
    """One panel positioned on the page: a row header, or a titled panel with its body."""
    style = f"left:{box.left}px;top:{box.top}px;width:{box.width}px;height:{box.height}px"
    if box.type == "row":
        return (
            f'<div class="row" data-panel-id="{box.id}" style="{style}">'
            f'<span class="caret">&#8964;</span>{_esc(box.title)}</div>'
        )
    description = box.panel.get("description")
    info = f'<span class="info" title="{_esc(description)}">i</span>' if description else ""
    body_w = box.width - 2 * PANEL_PAD
    body_h = box.height - PANEL_HEADER - PANEL_PAD
    if error:
        body = f'<div class="nodata error" style="height:{body_h}px">{_esc(error)}</div>'
    elif box.type == "stat":
        body = render_stat(box.panel, series, body_w, body_h)
    else:
        body = render_timeseries(box.panel, series, body_w, body_h, start, end, step)
    return (
        f'<section class="panel" data-panel-id="{box.id}" data-panel-type="{_esc(box.type)}" '
        f'style="{style}"><header><h2>{_esc(box.title)}</h2>{info}</header>'
        f'<div class="body" style="height:{body_h}px">{body}</div></section>'
    )


CLOCK_ICON = (
    '<svg width="12" height="12" viewBox="0 0 12 12" style="vertical-align:-1px">'
    f'<circle cx="6" cy="6" r="5" fill="none" stroke="{TEXT}"/>'
    f'<path d="M6 3v3l2 1.5" fill="none" stroke="{TEXT}"/></svg>'
)

CSS = f"""
* {{ box-sizing: border-box; }}
html, body {{ margin: 0; background: {BG_CANVAS}; color: {TEXT};
  font-family: Inter, "Helvetica Neue", Arial, "DejaVu Sans", sans-serif; font-size: 14px; }}
.page {{ position: relative; width: {PAGE_WIDTH}px; }}
.topbar {{ position: absolute; left: 0; top: 0; width: 100%; height: 48px; padding: 0 {PAGE_PADDING}px;
  display: flex; align-items: center; gap: 12px; background: {BG_PANEL};
  border-bottom: 1px solid {BORDER}; }}
.logo {{ width: 24px; height: 24px; border-radius: 50%;
  background: conic-gradient(#F05A28, #FBCA0A, #F05A28); }}
.crumbs {{ color: {TEXT_WEAK}; }} .crumbs b {{ color: {TEXT}; font-weight: 500; }}
.spacer {{ flex: 1; }}
.pill {{ border: 1px solid {BORDER}; border-radius: 2px; padding: 4px 10px; color: {TEXT};
  font-size: 12px; background: {BG_CANVAS}; }}
.vars {{ position: absolute; left: {PAGE_PADDING}px; top: 56px; display: flex; gap: 8px;
  align-items: center; font-size: 12px; }}
.vars .name {{ background: {BG_PANEL}; border: 1px solid {BORDER}; padding: 5px 10px; font-weight: 500; }}
.vars .value {{ border: 1px solid {BORDER}; padding: 5px 10px; margin-left: -9px; min-width: 90px; }}
.vars .note {{ color: {TEXT_WEAK}; margin-left: 12px; }}
.row {{ position: absolute; display: flex; align-items: center; gap: 6px; font-size: 16px;
  font-weight: 500; color: {TEXT}; }}
.row .caret {{ color: {TEXT_WEAK}; font-size: 14px; margin-top: -6px; }}
.panel {{ position: absolute; background: {BG_PANEL}; border: 1px solid {BORDER}; border-radius: 2px;
  overflow: hidden; }}
.panel header {{ height: {PANEL_HEADER}px; padding: 0 {PANEL_PAD}px; display: flex; align-items: center;
  gap: 6px; }}
.panel h2 {{ margin: 0; font-size: 14px; font-weight: 500; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }}
.info {{ display: inline-flex; width: 13px; height: 13px; border-radius: 50%; border: 1px solid {TEXT_WEAK};
  color: {TEXT_WEAK}; font-size: 9px; align-items: center; justify-content: center; font-weight: 700; }}
.body {{ padding: 0 {PANEL_PAD}px; position: relative; }}
.tick {{ fill: {TEXT_WEAK}; font-size: 11px; }}
.legend {{ display: flex; flex-wrap: wrap; column-gap: 16px; row-gap: 2px; padding-top: 4px;
  font-size: 12px; line-height: {LEGEND_LINE - 2}px; }}
.legend-item {{ display: inline-flex; align-items: center; gap: 6px; white-space: nowrap; }}
.legend-item i {{ display: inline-block; width: 14px; height: 4px; border-radius: 2px; }}
.stats {{ display: flex; gap: 8px; }}
.stat {{ position: relative; display: flex; flex-direction: column; justify-content: center;
  align-items: center; overflow: hidden; }}
.stat .spark {{ position: absolute; left: 0; bottom: 0; }}
.stat-name {{ position: relative; font-size: 12px; color: {TEXT}; }}
.stat-value {{ position: relative; font-weight: 500; line-height: 1.1; }}
.nodata {{ display: flex; align-items: center; justify-content: center; color: {TEXT_WEAK}; }}
.nodata.error {{ color: #F2495C; font-size: 12px; }}
.footer {{ position: absolute; left: {PAGE_PADDING}px; font-size: 11px; color: {TEXT_WEAK}; }}
"""


@dataclass
class RenderInput:
    """What a page is drawn from: the dashboard, each panel's series, the time range."""

    dashboard: dict[str, Any]
    series: dict[int, list[Series]]
    start: float
    end: float
    step: float
    variables: dict[str, str] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    note: str = ""


def save_data(data: RenderInput, path: Path) -> None:
    """The collected series as JSON, to redraw the page later without a live run (``--data``)."""
    payload = {
        "start": data.start,
        "end": data.end,
        "step": data.step,
        "variables": data.variables,
        "errors": {str(k): v for k, v in data.errors.items()},
        "note": data.note,
        "series": {str(k): [[s.name, s.points] for s in v] for k, v in data.series.items()},
    }
    path.write_text(json.dumps(payload))


def read_data(path: Path, dashboard: dict[str, Any]) -> RenderInput:
    payload = json.loads(path.read_text())
    return RenderInput(
        dashboard=dashboard,
        series={
            int(k): [Series(name, tuple((float(t), v) for t, v in points)) for name, points in v]
            for k, v in payload["series"].items()
        },
        start=payload["start"],
        end=payload["end"],
        step=payload["step"],
        variables=payload["variables"],
        errors={int(k): v for k, v in payload["errors"].items()},
        note=payload["note"],
    )


def render_page(data: RenderInput) -> str:
    """The whole dashboard as a static HTML page (inline SVG, no script, no external file)."""
    boxes = layout(data.dashboard)
    height = page_height(boxes)
    title = str(data.dashboard.get("title", "dashboard"))
    span = data.end - data.start
    first, last = datetime.fromtimestamp(data.start), datetime.fromtimestamp(data.end)
    stamp = f"{first:%Y-%m-%d %H:%M:%S} to {last:%H:%M:%S}"
    refresh = _esc(str(data.dashboard.get("refresh", "")))
    variables = "".join(
        f'<span class="name">{_esc(v.get("label") or v["name"])}</span>'
        f'<span class="value">{_esc(data.variables.get(v["name"], "All"))} &#9662;</span>'
        for v in data.dashboard.get("templating", {}).get("list", [])
    )
    panels = "".join(
        render_panel(b, data.series.get(b.id, []), data.start, data.end, data.step, data.errors.get(b.id))
        for b in boxes
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title><style>{CSS}</style></head>
<body><div class="page" style="height:{height}px">
<div class="topbar"><span class="logo"></span><span class="crumbs">Home &rsaquo; Dashboards &rsaquo;
<b>{_esc(title)}</b></span><span class="spacer"></span>
<span class="pill">{CLOCK_ICON} {stamp} ({span:.0f} s)</span>
<span class="pill">&#10227; {refresh}</span></div>
<div class="vars">{variables}<span class="note">{_esc(data.note)}</span></div>
{panels}
<div class="footer" style="top:{height - 24}px">Drawn by docs/dashboard/render.py from Prometheus
query_range answers to every target of docker/grafana/dashboards/acog.json (not Grafana itself).</div>
</div></body></html>
"""


# --- the live run -------------------------------------------------------------------------


def _log(message: str) -> None:
    print(f"[render] {message}", flush=True)


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
                    _log(f"bad labels ({self.model}): {exc}")

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
def _replay(url: str, dataset: str, model: str, rate: float, limit: int, log: Path) -> Iterator[None]:
    command = [
        sys.executable, "-m", "service.cli", "replay", url, dataset, "--model", model,
        "--delay", "1", "--rate", str(rate), "--loop", "--limit", str(limit),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    _log(f"acog replay {dataset} on model {model!r} at {rate:g}/s (pid {process.pid})")
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


def collect(prometheus: Any, dashboard: dict[str, Any], start: float, end: float) -> RenderInput:
    """Run every panel target with ``query_range`` over ``[start, end]``."""
    models = prometheus.api("label/model/values", **{"match[]": "acog_model_version"})
    variables = {v["name"]: all_value(models) for v in dashboard.get("templating", {}).get("list", [])}
    series: dict[int, list[Series]] = {}
    errors: dict[int, str] = {}
    boxes = {b.id: b for b in layout(dashboard)}
    steps = []
    for panel in all_panels(dashboard):
        if not panel.get("targets"):
            continue
        width = boxes[int(panel["id"])].width
        interval = grafana_interval(end - start, width, SCRAPE_SECONDS)
        steps.append(interval)
        panel_vars = {
            **variables,
            "__interval": f"{interval}s",
            "__rate_interval": f"{rate_interval(interval, SCRAPE_SECONDS)}s",
        }
        found: list[Series] = []
        for ref, expr, legend in panel_exprs(panel, panel_vars):
            try:
                answer = prometheus.api(
                    "query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=f"{interval}s"
                )
            except Exception as exc:  # one broken query shows as an error in its panel
                errors[int(panel["id"])] = f"target {ref}: {exc}"
                continue
            found.extend(series_from_response(answer, legend))
        series[int(panel["id"])] = found
    return RenderInput(
        dashboard=dashboard,
        series=series,
        start=start,
        end=end,
        step=float(max(steps, default=SCRAPE_SECONDS)),
        variables={name: "All" for name in variables},
        errors=errors,
        note=f"All = {', '.join(sorted(models))}",
    )


def live_run(seconds: float, workdir: Path, rate: float) -> RenderInput:
    """Service + Prometheus + traffic for ``seconds``; the dashboard's data over that run."""
    _repo_on_path()
    from tests.deploy.prometheus_runner import project_config, run_prometheus
    from tests.support.private_redis import PrivateRedis
    from tests.support.service_process import ServiceProcess

    dashboard = load_dashboard()
    (workdir / "redis").mkdir(parents=True)
    (workdir / "service").mkdir()
    with ExitStack() as stack:
        store = PrivateRedis(workdir / "redis")
        store.start()
        stack.callback(store.terminate)
        _log(f"private Redis on port {store.port}")
        service = ServiceProcess(
            workdir / "service",
            {
                "ACOG_REDIS_URL": store.url,
                "ACOG_DEFAULT_MODEL": '{"name":"default","n_features":24}',
                "ACOG_LABEL_TTL_SECONDS": str(LABEL_TTL_SECONDS),
                "ACOG_MAINTENANCE_INTERVAL_SECONDS": "2",
                "ACOG_API_KEYS": "",
                "ACOG_ADMIN_KEYS": "",
            },
        )
        service.start()
        stack.callback(service.stop)
        _log(f"service at {service.url} (log {service.log_path})")
        config = project_config(f"127.0.0.1:{service.port}", interval=f"{SCRAPE_SECONDS}s")
        prometheus = stack.enter_context(run_prometheus(config, workdir / "prometheus"))
        prometheus.wait_for_targets_up("acog", timeout=30)
        _log(f"Prometheus at {prometheus.url}, scraping every {SCRAPE_SECONDS} s")
        start = time.time()
        limit = int(rate * (seconds + 60))
        stack.enter_context(
            _replay(service.url, "german", "default", rate, limit, workdir / "replay-german.log")
        )
        second_rate = max(1.0, rate * 2 / 3)
        stack.enter_context(
            _replay(
                service.url,
                "sklearn:breast_cancer",
                SECOND_MODEL,
                second_rate,
                int(second_rate * (seconds + 60)),
                workdir / "replay-breast-cancer.log",
            )
        )
        prometheus.wait_for(f'acog_model_version{{model="{SECOND_MODEL}"}}', timeout=60)
        datasets = {"default": "german", SECOND_MODEL: "sklearn:breast_cancer"}
        drivers = [BadLabels(service.url, model, datasets[model], mix) for model, mix in MIXES.items()]
        for bad in drivers:
            bad.start()
            stack.callback(bad.join, 10)
            stack.callback(bad.stop_event.set)
        deadline = start + seconds
        while (left := deadline - time.time()) > 0:
            time.sleep(min(15.0, left))
            _log(f"traffic: {time.time() - start:.0f}/{seconds:g} s")
        end = time.time()
        time.sleep(SCRAPE_SECONDS + 0.5)  # the last scrape lands
        data = collect(prometheus, dashboard, start, end)
        for bad in drivers:
            _log(f"bad labels sent (items -> status): {dict(sorted(bad.sent.items()))}")
        return data


# --- screenshot ---------------------------------------------------------------------------


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        _log("installing Debian's chromium (apt-get install -y chromium)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=False, env=env)
        if found := shutil.which("chromium"):
            return found
    raise SystemExit("render: no chromium; install it with `apt-get install -y chromium` (as root)")


def screenshot(html_path: Path, png_path: Path, width: int, height: int) -> None:
    """Headless Chromium, a fresh profile, no background networking (the network is closed)."""
    with tempfile.TemporaryDirectory(prefix="acog-chromium-") as profile:
        command = [
            chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1",
            f"--user-data-dir={profile}", f"--window-size={width},{height}",
            f"--screenshot={png_path}", html_path.resolve().as_uri(),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0 or not png_path.exists():
        raise SystemExit(f"render: chromium failed ({result.returncode}):\n{result.stderr[-3000:]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=90.0, help="seconds of traffic to show")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the PNG to write")
    parser.add_argument("--rate", type=float, default=30.0, help="german examples per second")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, TSDB)")
    parser.add_argument("--save-data", type=Path, help="also write the collected series to this JSON file")
    parser.add_argument("--data", type=Path, help="redraw from a --save-data file instead of a live run")
    args = parser.parse_args(argv)
    began = time.monotonic()
    output: Path = args.output
    output.parent.mkdir(parents=True, exist_ok=True)
    if args.data:
        data = read_data(args.data, load_dashboard())
    else:
        workdir = Path(tempfile.mkdtemp(prefix="acog-dashboard-"))
        try:
            data = live_run(args.seconds, workdir, args.rate)
        finally:
            if args.keep:
                _log(f"work dir kept: {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
    if args.save_data:
        save_data(data, args.save_data)
    empty = [
        f"{b.id} {b.title!r}" for b in layout(data.dashboard) if b.type != "row" and not data.series.get(b.id)
    ]
    html_path = output.with_suffix(".html")
    html_path.write_text(render_page(data))
    height = page_height(layout(data.dashboard))
    screenshot(html_path, output, PAGE_WIDTH, height)
    total = sum(len(s) for s in data.series.values())
    size = output.stat().st_size
    _log(f"{len(data.series)} panels, {total} series; wrote {html_path} and {output} ({size} B)")
    if empty:
        _log(f"panels without data: {', '.join(empty)}")
    _log(f"done in {time.monotonic() - began:.0f} s")
    return 1 if empty or data.errors else 0


if __name__ == "__main__":
    sys.exit(main())
