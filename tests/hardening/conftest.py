"""Shared pieces of the hardening suite: keys, the fuzz budget, a service with keys, snapshots.

Every test here drives the real service (``python -m service.cli serve`` as a subprocess,
see :mod:`tests.support.service_process`) over HTTP and WebSocket, on a Redis of its own
(:class:`~tests.support.private_redis.PrivateRedis`) or on the embedded store.

The fuzz budget is ``ACOG_FUZZ_EXAMPLES`` (hypothesis examples per fuzz test; default
:data:`DEFAULT_FUZZ_EXAMPLES`, derandomised, so that CI stays fast and repeatable). A long
run, randomised::

    ACOG_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/hardening -q
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings

from ..e2e.client import Api, Running, comparable, private_redis, running
from ..support.private_redis import PrivateRedis

DEFAULT_FUZZ_EXAMPLES = 30
FUZZ_EXAMPLES = int(os.environ.get("ACOG_FUZZ_EXAMPLES", str(DEFAULT_FUZZ_EXAMPLES)))
LONG_FUZZ = FUZZ_EXAMPLES > DEFAULT_FUZZ_EXAMPLES

API_KEYS = ["api-key-0123456789abcdef", "api-key-second-fedcba9876543210", "k!#$%&'*+-./:;<=>?@[\\]^_`{|}~x"]
"""Three API keys, the last with every printable ASCII punctuation but the comma."""
ADMIN_KEYS = ["admin-key-0123456789abcdef", "admin-key-second-0123456789"]
KEYED_ENV = {"ACOG_API_KEYS": ",".join(API_KEYS), "ACOG_ADMIN_KEYS": ",".join(ADMIN_KEYS)}

N = 8
"""Features of the dense models the suite trains."""
CONFIG: dict[str, Any] = {"n_features": N, "algorithm": "acog", "eta": 10, "fit_intercept": False}
PROBE = [[((i * 7 + j * 3) % 11) / 5.0 - 1.0 for j in range(N)] for i in range(6)]
"""Rows never labelled: their scores show whether a model changed."""


def fuzz_settings(examples: int | None = None) -> settings:
    """Hypothesis settings of a fuzz test: the budget above, no deadline (a live server)."""
    return settings(
        max_examples=examples or FUZZ_EXAMPLES,
        deadline=None,
        derandomize=not LONG_FUZZ,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def authorised(api: Api, key: str) -> Api:
    """``api`` with every request carrying ``key``."""
    api.http.headers.update(bearer(key))
    return api


def train(api: Api, name: str, rows: int = 24, config: dict[str, Any] | None = None) -> None:
    """Create ``name`` and teach it ``rows`` labels, so that its probe scores are not all zero."""
    api.put_model(name, config or CONFIG)
    data = [[((i * 5 + j) % 9) / 4.0 - 1.0 for j in range(N)] for i in range(rows)]
    labels = [1 if sum(row[:3]) > 0 else -1 for row in data]
    for start in range(0, rows, 4):
        api.learn(name, data[start : start + 4], labels[start : start + 4])


def snapshot(api: Api, name: str, probe: list[Any] | None = None) -> tuple[Any, Any, list[float]]:
    """What a refused request must not change: generation, state (version, counts, measures,
    eta selection...) and the scores of the probe rows."""
    info = api.model(name)
    scores = api.scores(name, probe or PROBE) if info["status"] == "serving" else []
    return info["generation"], comparable(info["state"] or {}), scores


@pytest.fixture(scope="module")
def keyed_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateRedis]:
    with private_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


def start(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    env: dict[str, str],
    redis: PrivateRedis | None = None,
) -> Any:
    """``running(...)`` in a fresh directory (a context manager yielding :class:`Running`)."""
    full = dict(env)
    if redis is not None:
        full.setdefault("ACOG_REDIS_URL", redis.url)
    return running(tmp_path_factory.mktemp(name), full, redis)


def raw(run: Running, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """A request with no default headers (no key unless given)."""
    with httpx.Client(base_url=run.service.url, timeout=30) as client:
        return client.request(method, path, **kwargs)
