"""A stat panel's body: one big last value per series, coloured by thresholds, over a sparkline."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from .series import Series
from .theme import NAMED_COLORS, TEXT
from .units import format_value


def threshold_color(panel: dict[str, Any], value: float | None) -> str:
    """The colour of the highest threshold step at or below ``value`` (Grafana's stat colouring)."""
    steps = panel.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps") or []
    color = "green"
    for step in steps:
        if step.get("value") is None or (value is not None and value >= float(step["value"])):
            color = str(step.get("color", color))
    return NAMED_COLORS.get(color, color)


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
        name = f'<div class="stat-name">{escape(s.name)}</div>' if len(series) > 1 else ""
        cells.append(
            f'<div class="stat" style="width:{cell_w}px;height:{height}px">{spark}{name}'
            f'<div class="stat-value" style="color:{text_color};font-size:{font}px">'
            f"{escape(format_value(value, unit, decimals))}</div></div>"
        )
    return f'<div class="stats">{"".join(cells)}</div>'
