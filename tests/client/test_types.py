"""The client's reply types cover the server's reply schemas, and the client imports no server code."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import BaseModel

from service.api import schemas
from service.client import types

from ..support.service_process import ROOT

PAIRS: list[tuple[type[BaseModel], type[BaseModel]]] = [
    (schemas.PredictionOut, types.Prediction),
    (schemas.FeedbackOut, types.FeedbackResult),
    (schemas.ModelSummary, types.ModelSummary),
    (schemas.ModelInfo, types.ModelInfo),
    (schemas.CheckpointOut, types.Checkpoint),
    (schemas.Health, types.Health),
]


@pytest.mark.parametrize(("server", "client"), PAIRS, ids=[s.__name__ for s, _ in PAIRS])
def test_every_field_the_server_sends_has_a_typed_counterpart(
    server: type[BaseModel], client: type[BaseModel]
) -> None:
    missing = set(server.model_fields) - set(client.model_fields)
    assert not missing, f"{client.__name__} lacks {sorted(missing)}: add them to service/client/types.py"
    for name, field in client.model_fields.items():
        if name in server.model_fields and not server.model_fields[name].is_required():
            assert not field.is_required(), f"{client.__name__}.{name} is optional on the server"


def test_a_reply_from_a_newer_server_still_parses() -> None:
    reply = {"prediction_id": "m:1:1-2", "label": 0, "score": -0.5, "model": "m", "model_version": 3,
             "stored": True, "replica": "b"}  # fmt: skip
    assert types.Prediction.model_validate(reply).label == 0


def test_the_client_imports_no_server_code() -> None:
    code = (
        "import sys, service.client; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'starlette', 'numba', "
        "'redis', 'model_store', 'uvicorn') or m.startswith(('service.api', 'service.engine', "
        "'service.learners'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
