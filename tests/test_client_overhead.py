"""bench.client_overhead's section: ratios per repeat, medians and spreads, both tables."""

from __future__ import annotations

from bench.client_overhead import report

NAME = "/predict, one instance per call"


def test_the_section_reports_medians_spreads_and_ratios_per_repeat() -> None:
    results = {NAME: {"baseline": [100.0, 200.0, 300.0], "client": [50.0, 200.0, 330.0]}}
    local = {NAME: {"baseline": [10.0, 20.0, 30.0], "client": [11.0, 22.0, 33.0]}}
    text = report(results, local, "python -m bench.client_overhead")
    assert f"| {NAME} | 200 (100 to 300) | 200 (50 to 330) | 1.00 (0.50 to 1.10) |" in text
    assert f"| {NAME} | 20 (10 to 30) | 22 (11 to 33) | 1.10 (1.10 to 1.10) |" in text
    assert text.startswith("## Client overhead (`python -m bench.client_overhead`)")
