"""Values as Grafana shows them in a panel's unit (none, percentunit, s, reqps, ops, bytes, ...)."""

from __future__ import annotations

import math


def _auto_decimals(value: float) -> int:
    if value == 0 or not math.isfinite(value):
        return 0
    return max(0, min(4, 2 - math.floor(math.log10(abs(value)))))


def _fixed(value: float, decimals: int | None) -> str:
    text = f"{value:.{_auto_decimals(value) if decimals is None else decimals}f}"
    if decimals is None and "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def format_value(value: float | None, unit: str | None, decimals: int | None = None) -> str:
    """A value as Grafana shows it in ``unit`` (none, percentunit, s, reqps, ops, ...)."""
    if value is None:
        return "No data"
    if unit == "percentunit":
        return f"{_fixed(value * 100, decimals)}%"
    if unit == "percent":
        return f"{_fixed(value, decimals)}%"
    if unit == "s":
        magnitude = abs(value)
        if magnitude == 0:
            return "0 s"
        if magnitude < 1e-3:
            return f"{_fixed(value * 1e6, decimals)} µs"
        if magnitude < 1:
            return f"{_fixed(value * 1e3, decimals)} ms"
        if magnitude < 60:
            return f"{_fixed(value, decimals)} s"
        if magnitude < 3600:
            return f"{_fixed(value / 60, decimals)} min"
        return f"{_fixed(value / 3600, decimals)} hour"
    if unit == "bytes":  # Grafana's IEC bytes: 1 KiB = 1024 B
        scaled, prefix = value, 0
        while abs(scaled) >= 1024 and prefix < 4:
            scaled, prefix = scaled / 1024, prefix + 1
        return f"{_fixed(scaled, decimals)} {('B', 'KiB', 'MiB', 'GiB', 'TiB')[prefix]}"
    suffix = {"reqps": " req/s", "ops": " ops/s", "rps": " rd/s", "wps": " wr/s"}.get(unit or "", "")
    return f"{_fixed(value, decimals)}{suffix}"
