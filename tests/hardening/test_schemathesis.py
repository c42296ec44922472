"""schemathesis against openapi.yaml on a LIVE server (uvicorn in a subprocess).

For every operation of the document, cases that fit the schema (positive) and cases that do
not (negative), sent with an admin key: no answer may be a 5xx, every 2xx must match its
documented response schema, and a refused request must leave the trained model as it was.
The budget per operation and mode is ``ACOG_FUZZ_EXAMPLES`` (see conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from ..e2e.client import Running
from .conftest import ADMIN_KEYS, KEYED_ENV, PROBE, authorised, bearer, fuzz_settings, snapshot, start, train

schemathesis = pytest.importorskip("schemathesis", reason="a dev dependency: pip install -e '.[dev]'")

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = schemathesis.openapi.from_path(str(ROOT / "openapi.yaml"))
OPERATIONS: list[Any] = [result.ok() for result in SCHEMA.get_all_operations()]
ENV = {**KEYED_ENV, "ACOG_MAX_N_FEATURES": "64", "ACOG_MAX_MODELS": "16", "ACOG_MAX_BATCH": "64"}
CASES = [
    (op, mode)
    for op in OPERATIONS
    for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
    if mode == schemathesis.GenerationMode.POSITIVE or list(op.iter_parameters()) or op.body
]
"""Every operation with valid cases, and those with parameters or a body with invalid ones too."""
KEPT = "kept"
"""A trained model that no generated case is allowed to name (schemathesis may delete or replace
any other): a refused request must leave it exactly as it was."""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with start(tmp_path_factory, "schemathesis", ENV) as run:
        authorised(run.api, ADMIN_KEYS[0])
        train(run.api, KEPT)
        yield run


def names_kept(case: Any) -> bool:
    return KEPT not in str(case.path_parameters or {}) and KEPT not in str(case.body)


@pytest.mark.parametrize(
    "operation,mode", CASES, ids=[f"{op.method.upper()} {op.path} {mode.value}" for op, mode in CASES]
)
def test_no_5xx_and_documented_answers(live: Running, operation: Any, mode: Any) -> None:
    before = snapshot(live.api, KEPT, PROBE)
    counts = {"2xx": 0, "4xx": 0}

    @fuzz_settings()
    @given(case=operation.as_strategy(generation_mode=mode).filter(names_kept))
    def run(case: Any) -> None:
        response = case.call(base_url=live.service.url, headers=bearer(ADMIN_KEYS[0]), timeout=30)
        assert response.status_code < 500, (
            f"{case.method} {case.formatted_path} {case.body!r}: {response.text}"
        )
        if response.status_code < 300:
            counts["2xx"] += 1
            operation.validate_response(response)
        else:
            counts["4xx"] += 1

    run()
    assert snapshot(live.api, KEPT, PROBE) == before
    assert sum(counts.values()) > 0
