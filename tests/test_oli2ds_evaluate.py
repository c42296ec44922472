"""``acog evaluate --protocol oli2ds`` and OLI2DS under the online protocol, through the real command."""

from __future__ import annotations

import json

import pytest

from research.protocols import PROTOCOLS
from service.cli import main

from .conftest import dataset_path


def test_the_protocols_are_one_registry() -> None:
    assert {"online", "oli2ds"} <= set(PROTOCOLS)


def test_the_code_protocol_prints_the_targets_round(capsys: pytest.CaptureFixture[str]) -> None:
    dataset_path("oli2ds", "wdbc.csv.xz")
    assert (
        main(
            ["evaluate", "wdbc", "--protocol", "oli2ds", "--scheme", "trapezoidal", "--rounds", "2", "--json"]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "oli2ds" and out["seed"] == 20 and out["params"]["zero_is_missing"] is True
    (result,) = out["results"]
    first = result["rounds"][0]
    assert (first["tp"], first["fn"], first["tn"], first["fp"]) == (201, 11, 333, 24)  # the spec's round 1
    assert len(result["rounds"]) == 2


def test_the_code_protocol_runs_oli2ds_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "wdbc", "--protocol", "oli2ds", "--algorithms", "acog"]) == 2
    assert "OLI2DS only" in capsys.readouterr().err


def test_oli2ds_sits_in_the_online_tables(capsys: pytest.CaptureFixture[str]) -> None:
    dataset_path("german", "german.mat")
    argv = ["evaluate", "german", "--algorithms", "oli2ds,pa1", "--permutations", "2", "--oli2ds-C", "0.5"]
    assert main([*argv, "--json"]) == 0
    rows = {(r["algorithm"], r["metric"]): r for r in json.loads(capsys.readouterr().out)["results"]}
    assert set(rows) == {("OLI2DS", "sum"), ("OLI2DS", "cost"), ("PA-I", "sum"), ("PA-I", "cost")}
    assert rows["OLI2DS", "sum"]["best"]["params"]["C"] == 0.5  # --oli2ds-C, not PA-I's --C
    assert rows["OLI2DS", "cost"]["best"]["params"]["rho"] == pytest.approx(9.0)
    assert [t["params"]["C"] for t in rows["OLI2DS", "sum"]["tried"]] == [0.5]
    assert rows["PA-I", "sum"]["best"]["params"]["C"] == 10.0
