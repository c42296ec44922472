"""Render the provisioned Grafana dashboard's panels from a live run, without Grafana.

Grafana cannot be installed on the development machines (no registry we can reach ships a
``grafana-server``), so this package shows the same panels' data the way Grafana would:

1. starts the real service (``python -m service.cli serve``) on a private Redis, with a
   default model (24 features, german's dimension);
2. starts a real Prometheus with the stack's own config (``docker/prometheus/prometheus.yml``,
   the compose target replaced by the service, scraping every ``SCRAPE_SECONDS``);
3. drives traffic for ``--seconds``: ``acog replay`` of german on ``default`` and of
   ``sklearn:breast_cancer`` on a second model, a challenger (AROW, started from the log) on
   ``default``, plus a trickle of bad labels (duplicates,
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

The page is written next to the PNG (same name, ``.html``). The modules, in the order of a run:

- ``stack``: the live run (Redis, service, Prometheus) and ``traffic``: replays and bad labels;
- ``queries``: every panel target through ``query_range``, with ``variables`` filled in as
  Grafana does, into ``series``; ``page_data``: what a page is drawn from, saved and read back;
- ``grid``: the panels' boxes; ``panel``, ``timeseries``, ``stat``: their bodies, with ``axes``,
  ``units`` and ``theme``; ``page``: the HTML page around them;
- ``screenshot``: headless Chromium; ``cli``: the command line.

The drawing is pure and tested without network or browser by ``tests/test_dashboard_snapshot.py``.
"""

from __future__ import annotations

from .axes import nice_ticks
from .grid import PanelBox, all_panels, layout, load_dashboard, page_height
from .page import render_page
from .page_data import RenderInput, read_data, save_data
from .panel import render_panel
from .series import Series, legend_name, series_from_response
from .theme import PAGE_PADDING, PAGE_WIDTH
from .units import format_value
from .variables import all_value, grafana_interval, panel_exprs, rate_interval

__all__ = [
    "PAGE_PADDING",
    "PAGE_WIDTH",
    "PanelBox",
    "RenderInput",
    "Series",
    "all_panels",
    "all_value",
    "format_value",
    "grafana_interval",
    "layout",
    "legend_name",
    "load_dashboard",
    "nice_ticks",
    "page_height",
    "panel_exprs",
    "rate_interval",
    "read_data",
    "render_page",
    "render_panel",
    "save_data",
    "series_from_response",
]
