"""schemathesis against openapi.yaml on a LIVE server (uvicorn in a subprocess).

For every operation of the document, cases that fit the schema (positive) and cases that do
not (negative), on a service with API keys (sent with an admin key) and on an open one: no answer
may be a 5xx, every status must be one the document lists for the operation, every answer must
match its documented schema, and a refused request must leave the trained model as it was.
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


@pytest.fixture(scope="module", params=["keys", "open"])
def live(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Running]:
    """The service with API keys (requests carry an admin key), or open (no keys configured)."""
    keyed = request.param == "keys"
    env = ENV if keyed else {k: v for k, v in ENV.items() if k not in KEYED_ENV}
    with start(tmp_path_factory, f"schemathesis-{request.param}", env) as run:
        if keyed:
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
        what = f"{case.method} {case.formatted_path} {case.body!r}: {response.status_code} {response.text}"
        assert response.status_code < 500, what
        assert operation.responses.find_by_status_code(response.status_code) is not None, (
            f"undocumented status: {what}"
        )
        operation.validate_response(response)
        counts["2xx" if response.status_code < 300 else "4xx"] += 1

    run()
    assert snapshot(live.api, KEPT, PROBE) == before
    assert sum(counts.values()) > 0
