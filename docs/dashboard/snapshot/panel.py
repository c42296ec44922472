"""One panel placed on the page: a row header, or a titled panel around its body."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from .grid import PanelBox
from .series import Series
from .stat import render_stat
from .theme import PANEL_HEADER, PANEL_PAD
from .timeseries import render_timeseries


def render_panel(
    box: PanelBox, series: Sequence[Series], start: float, end: float, step: float, error: str | None = None
) -> str:
    """One panel positioned on the page: a row header, or a titled panel with its body."""
    style = f"left:{box.left}px;top:{box.top}px;width:{box.width}px;height:{box.height}px"
    if box.type == "row":
        return (
            f'<div class="row" data-panel-id="{box.id}" style="{style}">'
            f'<span class="caret">&#8964;</span>{escape(box.title)}</div>'
        )
    description = box.panel.get("description")
    info = f'<span class="info" title="{escape(description)}">i</span>' if description else ""
    body_w = box.width - 2 * PANEL_PAD
    body_h = box.height - PANEL_HEADER - PANEL_PAD
    if error:
        body = f'<div class="nodata error" style="height:{body_h}px">{escape(error)}</div>'
    elif box.type == "stat":
        body = render_stat(box.panel, series, body_w, body_h)
    else:
        body = render_timeseries(box.panel, series, body_w, body_h, start, end, step)
    return (
        f'<section class="panel" data-panel-id="{box.id}" data-panel-type="{escape(box.type)}" '
        f'style="{style}"><header><h2>{escape(box.title)}</h2>{info}</header>'
        f'<div class="body" style="height:{body_h}px">{body}</div></section>'
    )
