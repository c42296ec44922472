"""Every panel target run with Prometheus' ``query_range`` over the run, as Grafana would."""

from __future__ import annotations

from typing import Any

from .grid import all_panels, layout
from .page_data import RenderInput
from .series import Series, series_from_response
from .variables import all_value, grafana_interval, panel_exprs, rate_interval

SCRAPE_SECONDS = 2  # Prometheus scrape interval, also the datasource's minimum interval


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
