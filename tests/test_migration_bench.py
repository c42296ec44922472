"""bench.migration: the protocol on a small data set, and its section of docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.migration import DATASETS, SECTION, SYSTEMS, WINDOWS, balanced_sum, render, run_dataset, split_of
from bench.report import read_section
from tests.conftest import dataset_path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def test_the_split_is_the_papers_quarters_or_table_1() -> None:
    assert split_of("german", 24) == (6, 12, 6)
    assert split_of("usps", 256) == (64, 128, 64)
    assert split_of("dna", 180) == (50, 80, 50)


def test_balanced_sum_is_the_mean_of_sensitivity_and_specificity() -> None:
    y = np.array([1, 1, -1, -1, -1])
    assert balanced_sum(np.array([1, -1, -1, -1, 1]), y) == 50.0 * (0.5 + 2 / 3)


def test_one_data_set_runs_every_system_over_every_window_and_renders() -> None:
    dataset_path("australian", "australian_scale.xz")
    result = run_dataset("australian", seeds=1)
    assert result["after_change"] == 345 and result["split"] == [3, 8, 3]
    [run] = result["runs"]
    assert set(run) == {s.name for s in SYSTEMS}
    assert all(set(cells) == {str(w) for w in WINDOWS} for cells in run.values())
    assert all(0.0 <= v <= 100.0 for cells in run.values() for v in cells.values())
    seconds = {s: [1e-6, 2e-6] for s in ("ACOG (one member)", "OPID phase C")}
    costs = {"dim": 4, "labels": 10, "repeats": 2, "seconds": seconds}
    machine = {"cpu": "cpu", "python": "3", "packages": {}, "seconds": 1.0}
    text = render({"australian": result}, costs, 1, machine)
    assert text.count("| australian |") == len(WINDOWS)


def test_the_doc_section_covers_every_data_set() -> None:
    body = read_section(DOC, SECTION)
    assert body is not None, "docs/benchmarks.md has no migration section (python -m bench.migration)"
    for name in DATASETS:
        assert body.count(f"| {name} |") == len(WINDOWS), name
    assert "python -m bench.migration" in body
