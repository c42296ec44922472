"""A time series panel's body: an SVG plot with its axes and a bottom legend."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from html import escape
from typing import Any

from .axes import axis_range, clock, tick_decimals, time_ticks
from .series import Series, number
from .theme import CLASSIC_PALETTE, GRID_LINE, LEGEND_LINE, PANEL_PAD
from .units import format_value

Y_AXIS_WIDTH = 58
X_AXIS_HEIGHT = 20


def _paths(
    points: Sequence[tuple[float, float | None]],
    sx: Callable[[float], float],
    sy: Callable[[float], float],
    max_gap: float,
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
    fixed_min = number(defaults.get("min")) if "min" in defaults else None
    fixed_max = number(defaults.get("max")) if "max" in defaults else None
    x0, x1 = Y_AXIS_WIDTH, width - 10
    y0, y1 = 6, plot_h - X_AXIS_HEIGHT
    ticks = axis_range(values, fixed_min, fixed_max, count=max(2, (y1 - y0) // 32))
    low, high = ticks[0], ticks[-1]
    decimals = tick_decimals(ticks, unit)

    def sx(t: float) -> float:
        return x0 + (t - start) / max(1e-9, end - start) * (x1 - x0)

    def sy(v: float) -> float:
        v = min(max(v, low), high)
        return y1 - (v - low) / max(1e-12, high - low) * (y1 - y0)

    parts = [f'<svg class="plot" width="{width}" height="{plot_h}" viewBox="0 0 {width} {plot_h}">']
    for tick in ticks:
        y = sy(tick)
        parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID_LINE}"/>')
        label = format_value(tick, unit, decimals)
        parts.append(
            f'<text x="{x0 - 8}" y="{y + 4:.1f}" text-anchor="end" class="tick">{escape(label)}</text>'
        )
    times = time_ticks(start, end, x1 - x0)
    step_hint = times[1] - times[0] if len(times) > 1 else 60.0
    for t in times:
        x = sx(t)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y0}" y2="{y1}" stroke="{GRID_LINE}"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{y1 + 15}" text-anchor="middle" class="tick">{clock(t, step_hint)}</text>'
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
                f'stroke-linejoin="round" data-series="{escape(s.name)}"/>'
            )
    parts.append("</svg>")
    if show_legend:
        items = "".join(
            f'<span class="legend-item"><i style="background:{CLASSIC_PALETTE[i % len(CLASSIC_PALETTE)]}">'
            f"</i>{escape(name)}</span>"
            for i, name in enumerate(names)
        )
        parts.append(f'<div class="legend">{items}</div>')
    return "".join(parts)
