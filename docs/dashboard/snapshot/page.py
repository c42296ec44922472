"""The whole dashboard as one static HTML page: Grafana's top bar, variables and every panel."""

from __future__ import annotations

from datetime import datetime
from html import escape

from .grid import layout, page_height
from .page_data import RenderInput
from .panel import render_panel
from .theme import (
    BG_CANVAS,
    BG_PANEL,
    BORDER,
    LEGEND_LINE,
    PAGE_PADDING,
    PAGE_WIDTH,
    PANEL_HEADER,
    PANEL_PAD,
    TEXT,
    TEXT_WEAK,
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


def render_page(data: RenderInput) -> str:
    """The whole dashboard as a static HTML page (inline SVG, no script, no external file)."""
    boxes = layout(data.dashboard)
    height = page_height(boxes)
    title = str(data.dashboard.get("title", "dashboard"))
    span = data.end - data.start
    first, last = datetime.fromtimestamp(data.start), datetime.fromtimestamp(data.end)
    stamp = f"{first:%Y-%m-%d %H:%M:%S} to {last:%H:%M:%S}"
    refresh = escape(str(data.dashboard.get("refresh", "")))
    variables = "".join(
        f'<span class="name">{escape(v.get("label") or v["name"])}</span>'
        f'<span class="value">{escape(data.variables.get(v["name"], "All"))} &#9662;</span>'
        for v in data.dashboard.get("templating", {}).get("list", [])
    )
    panels = "".join(
        render_panel(b, data.series.get(b.id, []), data.start, data.end, data.step, data.errors.get(b.id))
        for b in boxes
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title><style>{CSS}</style></head>
<body><div class="page" style="height:{height}px">
<div class="topbar"><span class="logo"></span><span class="crumbs">Home &rsaquo; Dashboards &rsaquo;
<b>{escape(title)}</b></span><span class="spacer"></span>
<span class="pill">{CLOCK_ICON} {stamp} ({span:.0f} s)</span>
<span class="pill">&#10227; {refresh}</span></div>
<div class="vars">{variables}<span class="note">{escape(data.note)}</span></div>
{panels}
<div class="footer" style="top:{height - 24}px">Drawn by docs/dashboard/render.py from Prometheus
query_range answers to every target of docker/grafana/dashboards/acog.json (not Grafana itself).</div>
</div></body></html>
"""
