"""What a page is drawn from, and its JSON file for redrawing without a live run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .series import Series


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
