"""examples/drift_challenger.py runs against a real service: the detector signals after the change, the
challenger started then beats the model on the new concept and is promoted, and the client's
challenger, checkpoint and rollback calls answer."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from service.client import Conflict, InvalidRequest, NotFound

from ..support.service_process import ROOT
from .conftest import Served


def test_the_drift_walk_through_runs(served: Served) -> None:
    out = subprocess.run(
        [sys.executable, "examples/drift_challenger.py", served.service.url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    detected = re.search(r"drift detected at label ([\d,]+) \(\+(\d+) after the change\)", text)
    assert detected is not None and int(detected.group(2)) <= 300, text
    assert "promoted: generation" in text and "retained checkpoints: [(" in text, text


def test_client_calls_of_checkpoints_rollback_policy_and_challengers(served: Served) -> None:
    client = served.client
    client.put_model("hist", {"n_features": 3}, replace=True)
    client.learn_batch([([1.0, 0.0, 0.5], 1), ([0.0, 1.0, 0.5], -1)], model="hist")
    client.checkpoint("hist")
    kept = client.list_checkpoints("hist")
    assert kept and kept[0].version == 2
    assert client.set_drift_policy("hist", "reset").state["drift"]["on_drift"] == "reset"  # type: ignore[index]
    with pytest.raises(InvalidRequest):
        client.put_challenger("hist", "wide", {"n_features": 4})
    info = client.put_challenger("hist", "arow", {"n_features": 3, "algorithm": "arow"})
    assert "arow" in info.state["challengers"]  # type: ignore[index]
    client.delete_challenger("hist", "arow")
    with pytest.raises(NotFound):
        client.promote_challenger("hist", "arow")
    rolled = client.rollback("hist", 2)
    assert rolled.generation == kept[0].generation + 1 and rolled.state["version"] == 0  # type: ignore[index]
    with pytest.raises((InvalidRequest, Conflict)):
        client.rollback("hist", 2)  # the new generation has no checkpoint at 2


def test_a_challenger_started_from_the_log_through_the_client(served: Served) -> None:
    client = served.client
    client.put_model("logged", {"n_features": 3}, replace=True)
    client.learn_batch([([1.0, 0.0, 0.5], 1), ([0.0, 1.0, 0.5], -1), ([0.5, 0.5, 0.0], 1)], model="logged")
    with pytest.raises(InvalidRequest) as refused:
        client.put_challenger("logged", "arow", {"n_features": 3, "algorithm": "arow"}, start="yesterday")
    assert refused.value.field.endswith("start")
    info = client.put_challenger("logged", "arow", {"n_features": 3, "algorithm": "arow"}, start="log")
    arow = info.state["challengers"]["arow"]  # type: ignore[index]
    assert arow["start"] == "log" and arow["since_version"] == 4
    assert arow["history"] == {"labels": 3, "from_version": 1, "to_version": 3} and arow["labels"] == 3
    now = client.put_challenger("logged", "now", {"n_features": 3, "algorithm": "pa1"}, start="now")
    assert now.state["challengers"]["now"]["history"] is None  # type: ignore[index]
    assert now.state["challengers"]["now"]["start"] == "now"  # type: ignore[index]
