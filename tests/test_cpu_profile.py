"""bench/cpu_profile.py: py-spy samples charged to components, and CPU us per request."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cpu_profile import OTHER, component, samples_by_component, us_per_request

LOOP = "Runner.run (asyncio/runners.py:118)"
ROUTE = "get_request_handler.<locals>.app (fastapi/routing.py:484)"
PREDICT = "Engine.predict (service/engine/engine.py:350)"
REDIS = "AbstractConnection.send_command (redis/asyncio/connection.py:520)"
JSON = "dumps (json/__init__.py:231)"


def test_the_innermost_frame_with_a_component_takes_the_sample() -> None:
    assert component([LOOP, ROUTE, PREDICT]) == "our engine, features, learners, store"
    assert component([LOOP, ROUTE, PREDICT, REDIS]) == "redis-py client (fallbacks; the log follower's reads)"
    assert component([LOOP, ROUTE, JSON]) == "FastAPI (routing, dependencies, telemetry check)"
    assert component([LOOP]) == "asyncio event loop and streams"
    assert component(["<module> (<frozen runpy>:88)", JSON, "garbage"]) == OTHER


def test_us_per_request_from_raw_lines(tmp_path: Path) -> None:
    raw = tmp_path / "profile.txt"
    raw.write_text(
        f"{LOOP};{ROUTE} 30\n{LOOP};{ROUTE};{PREDICT} 20\n{LOOP};{ROUTE};{PREDICT};{REDIS} 10\nnot a sample\n"
    )
    with raw.open() as lines:
        counts = samples_by_component(lines)
    assert sum(counts.values()) == 60
    # 250 samples/s, 1,000 requests: 30 samples are 0.12 s, i.e. 120 us a request
    us = us_per_request(raw, rate=250, requests=1000)
    assert us["FastAPI (routing, dependencies, telemetry check)"] == pytest.approx(120.0)
    assert us["our engine, features, learners, store"] == pytest.approx(80.0)
    assert us["redis-py client (fallbacks; the log follower's reads)"] == pytest.approx(40.0)
