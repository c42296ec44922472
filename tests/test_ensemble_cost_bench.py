"""``python -m bench.ensemble_cost`` writes its section with the baseline named and a ratio per d."""

from __future__ import annotations

from pathlib import Path

from bench.ensemble_cost import SECTION, main
from bench.report import read_section


def test_the_section_names_the_baseline_and_gives_ratios_with_their_range(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    assert main(["--repeats", "2", "--dims", "3,40", "--learn-labels", "30", "--run-labels", "60",
                 "--output", str(out)]) == 0  # fmt: skip
    text = read_section(out, SECTION)
    assert text is not None and "Baseline: the linear-only default" in text
    rows = [line for line in text.splitlines() if line.startswith("| 3 |") or line.startswith("| 40 |")]
    assert [r.split(" | ")[1] for r in rows] == ["20", "10"]  # members below and above the threshold
    assert all(r.count("x [") == 2 for r in rows)
