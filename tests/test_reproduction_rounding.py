"""The reproduction report's one-ulp check (:mod:`bench.reproduction.rounding`).

Some rows of the report sit on exact ties: on mushrooms' binary features COG-II's hinge meets
``y w.x = 1`` up to rounding, and which side rounding puts it decides an update. These tests
pin that the check finds such rows, that the report's rounding notes re-derive from a rerun,
and that a row without ties is left out.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from bench.reproduction.plans import BLOCKS, PLANS
from bench.reproduction.rounding import SCALES, moved_rows, rounding_note
from bench.reproduction.runs import dataset, run_stream
from research.protocols import online as ev
from service.datasets import REGISTRY
from tests.conftest import dataset_path
from tests.test_reproduction_doc import sections

NOTE = re.compile(r"- Rounding: .*")
MOVED = re.compile(r"([A-Za-z-]+) \(([^)]+)\) ([0-9.]+), ([0-9.]+) up, ([0-9.]+) down")


def summary(cost: float) -> dict[str, Any]:
    stat = {"mean": 0.0, "std": 0.0}
    return {
        "cost_hundreds": {"mean": cost, "std": 0.0},
        "sum_percent": stat,
        "sensitivity_percent": stat,
        "specificity_percent": stat,
    }


def result_with(as_is: float, up: float, down: float) -> dict[str, Any]:
    row = {"algorithm": "COG-II", "metric": "cost", "best": summary(as_is)}
    return {
        "jobs": [{"block": "cost", "rows": [row]}],
        "rounding": {"rows": {"cost:COG-II": {"up": summary(up), "down": summary(down)}}},
    }


def test_a_row_whose_printed_headline_moves_is_listed() -> None:
    plan = PLANS["mushrooms"]  # cost printed raw: 0.34395 hundreds -> 34.395
    result = result_with(0.34395, 0.3441, 0.3425)
    [(block, algorithm, *means)] = moved_rows(plan, result)
    assert (block, algorithm) == ("cost", "COG-II")
    assert means == pytest.approx([34.395, 34.41, 34.25])
    note = rounding_note(plan, result)
    assert "1 of the 1 rows change" in note
    assert f"COG-II ({BLOCKS['cost']}) 34.395, 34.410 up, 34.250 down" in note


def test_a_move_below_the_printed_digits_is_not_listed() -> None:
    result = result_with(0.343951, 0.343952, 0.343949)
    assert moved_rows(PLANS["mushrooms"], result) == []
    assert "None of the 1 rows changes its printed headline" in rounding_note(PLANS["mushrooms"], result)


def test_no_check_no_note() -> None:
    result = result_with(0.1, 0.1, 0.1)
    del result["rounding"]
    assert rounding_note(PLANS["mushrooms"], result) == ""


def test_mushrooms_cog_ii_cost_sits_on_ties_as_the_report_says() -> None:
    """COG-II's cost row on mushrooms, re-run at its picked setting as is and one ulp each way: the
    three headlines differ, and the report's rounding note prints these very digits."""
    dataset_path(*REGISTRY["mushrooms"].files[0].split("/"))
    text = sections()["mushrooms"]
    setting = picked_eta(text, "COG-II", BLOCKS["cost"])
    data = dataset("mushrooms")
    orders = ev.permutations(data, 20, 0)
    params = {"eta": setting, "loss": "II", "rho": 9.0, "alpha_p": 0.5, "fit_intercept": False}
    scale = PLANS["mushrooms"].cost_scale
    means = [
        f"{run_stream(data, 'cog', params, orders, scale=s)['cost_hundreds']['mean'] * scale:.3f}"
        for s in (1.0, SCALES["up"], SCALES["down"])
    ]
    assert len(set(means)) == 3
    [note] = NOTE.findall(text)
    assert ("COG-II", BLOCKS["cost"], *means) in MOVED.findall(note)


def picked_eta(text: str, algorithm: str, run: str) -> float:
    """The eta a row of the report's comparison table was picked with."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 8 and cells[0] == algorithm and cells[1] == run:
            return float(cells[2].removeprefix("eta="))
    raise AssertionError(f"no row {algorithm} / {run}")
