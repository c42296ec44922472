"""The ticks of a time series panel's axes: round values up the side, wall-clock times along."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]`` (about ``count`` of them)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9) * step
    ticks: list[float] = []
    value = first
    while value <= high + step * 1e-6 and len(ticks) < 50:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high - step * 1e-6:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def axis_range(
    values: Sequence[float], fixed_min: float | None, fixed_max: float | None, count: int = 4
) -> list[float]:
    """The y ticks of a panel: its ``min``/``max`` if set, else a round range around the data."""
    data_low, data_high = min(values, default=0.0), max(values, default=1.0)
    pad = 0.1 * ((data_high - data_low) or abs(data_high) or 1.0)  # uPlot pads a free side by 10 %
    low = fixed_min if fixed_min is not None else data_low - pad
    high = fixed_max if fixed_max is not None else data_high + pad
    if fixed_min is None and data_low >= 0 > low:
        low = 0.0
    if fixed_max is None and fixed_min is not None and high <= low:
        high = low + 1.0
    ticks = nice_ticks(low, high, count)
    if fixed_min is not None:
        ticks = [t for t in ticks if t >= fixed_min - 1e-12] or [fixed_min]
        if ticks[0] > fixed_min:
            ticks.insert(0, fixed_min)
    if fixed_max is not None:
        ticks = [t for t in ticks if t <= fixed_max + 1e-12]
        if ticks[-1] < fixed_max:
            ticks.append(fixed_max)
    return ticks


def tick_decimals(ticks: Sequence[float], unit: str | None) -> int:
    """The fewest decimals that show every tick exactly, in the unit's displayed scale."""
    scale = 100.0 if unit == "percentunit" else 1.0
    if unit == "s" and ticks and max(abs(t) for t in ticks) < 1:
        scale = 1000.0  # shown in ms
    for decimals in range(5):
        if all(abs(round(t * scale, decimals) - t * scale) < 1e-9 for t in ticks):
            return decimals
    return 4


def time_ticks(start: float, end: float, width_px: int) -> list[float]:
    """Round wall-clock times across ``[start, end]``, about one per 90 px."""
    wanted = max(2, width_px // 90)
    span = max(1.0, end - start)
    step = next(
        (s for s in (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600) if span / s <= wanted),
        3600,
    )
    first = math.ceil(start / step) * step
    return [float(t) for t in range(int(first), int(end) + 1, step)]


def clock(ts: float, step_hint: float) -> str:
    """A time tick's label: seconds shown while ticks are under a minute apart."""
    moment = datetime.fromtimestamp(ts)
    return moment.strftime("%H:%M:%S" if step_hint < 60 else "%H:%M")
