"""Series of a Prometheus ``query_range`` answer, named by the target's ``legendFormat``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

_LEGEND_VARIABLE = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")


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


def number(raw: Any) -> float | None:
    """``raw`` as a finite float, else None (Prometheus sends ``"NaN"`` and ``"+Inf"`` as strings)."""
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
        points = tuple((float(t), number(v)) for t, v in item.get("values", []))
        series.append(Series(legend_name(legend_format, item.get("metric", {})), points))
    return series
