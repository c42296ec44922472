"""The dashboard's panels and where Grafana puts them on its 24-column grid."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .paths import DASHBOARD
from .theme import GRID_CELL_HEIGHT, GRID_COLUMNS, GRID_MARGIN, HEADER_HEIGHT, PAGE_PADDING, PAGE_WIDTH


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
