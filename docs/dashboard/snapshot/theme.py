"""Grafana's look (dark theme, v10/v11): page geometry, panel chrome and colours."""

from __future__ import annotations

PAGE_WIDTH = 1600
PAGE_PADDING = 16
GRID_COLUMNS = 24
GRID_CELL_HEIGHT = 30
GRID_MARGIN = 8
HEADER_HEIGHT = 96  # the top bar and the variables bar above the grid
ROW_HEIGHT = GRID_CELL_HEIGHT

PANEL_HEADER = 32
PANEL_PAD = 8
LEGEND_LINE = 20

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
