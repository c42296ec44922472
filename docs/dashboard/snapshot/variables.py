"""Template variables as Grafana fills them in: ``$__interval``, ``$__rate_interval``, All."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from .paths import repo_on_path

# Grafana's interval rounding (kbn.roundInterval), as (upper bound, rounded) in seconds.
_ROUND_INTERVALS = (
    (1.5, 1), (3.5, 2), (7.5, 5), (12.5, 10), (17.5, 15), (25, 20), (45, 30), (90, 60),
    (210, 120), (450, 300), (750, 600), (1050, 900), (1500, 1200), (2700, 1800), (5400, 3600),
)  # fmt: skip


def round_interval(seconds: float) -> int:
    """Grafana's rounding of a computed interval to a readable one."""
    for bound, rounded in _ROUND_INTERVALS:
        if seconds < bound:
            return rounded
    return 3600 * max(1, round(seconds / 3600))


def grafana_interval(range_seconds: float, width_px: int, min_interval: float) -> int:
    """``$__interval`` of a panel: the range over its width in pixels, no less than the minimum."""
    return max(round_interval(range_seconds / max(1, width_px)), math.ceil(min_interval))


def rate_interval(interval: float, scrape: float) -> int:
    """``$__rate_interval = max($__interval + scrape interval, 4 * scrape interval)``."""
    return int(max(interval + scrape, 4 * scrape))


def all_value(values: Sequence[str]) -> str:
    """A multi-value variable set to All, as Grafana formats it for a Prometheus regex."""
    escaped = [re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\\\1", v) for v in sorted(values)]
    return "(" + "|".join(escaped) + ")" if len(escaped) != 1 else escaped[0]


def panel_exprs(panel: dict[str, Any], variables: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(refId, substituted expr, legendFormat)`` for each target of ``panel``."""
    repo_on_path()
    from tests.deploy.promql import substitute_variables

    return [
        (
            str(t.get("refId", "A")),
            substitute_variables(str(t["expr"]), variables),
            str(t.get("legendFormat", "")),
        )
        for t in panel.get("targets", [])
        if t.get("expr") and not t.get("hide")
    ]
