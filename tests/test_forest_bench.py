"""``python -m bench.forest`` writes its section: river's AMF named as the baseline, speed-ups, the
default model's cost per label against river's AMF, and quality, each with its range."""

from __future__ import annotations

from pathlib import Path

from bench.forest import SECTION, main
from bench.report import read_section


def test_the_section_names_the_baseline_and_gives_speed_ups_with_their_range(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    assert main(["--repeats", "2", "--rows", "120", "--output", str(out)]) == 0
    text = read_section(out, SECTION)
    assert text is not None and "Baseline: river's `forest.AMFClassifier(n_estimators=10)`" in text
    rows = [line for line in text.splitlines() if line.startswith("| phishing") or line.startswith("| norm")]
    assert len(rows) == 2
    assert "| defaults µs/label | defaults / river |" in text
    assert all(r.count("x [") == 0 and r.count("]x") == 3 and r.count(" to ") == 11 for r in rows)
