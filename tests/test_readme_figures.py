"""Every figure in the README comes from a script, between markers that the script rewrites.

- The ``defaults`` and ``benchmarks`` blocks are what ``python -m bench.readme`` renders now from
  ``docs/benchmarks.md`` (each of whose sections its benchmark script wrote) and the code's defaults:
  a benchmark rerun without ``python -m bench.readme`` fails here.
- ``incomplete-streams`` is written by ``bench.incomplete_streams`` in the same run as its section of
  ``docs/benchmarks.md``: the G-means it quotes are that section's.
- Outside the marker blocks the README holds no measured figure (a number followed by a unit of time,
  a percentage, a ratio, a rate or a size), but for the settings listed in :data:`SETTINGS`.
- ``docs/benchmarks.md`` holds nothing outside its scripts' sections but its title.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench import readme
from bench.report import DEFAULT_PATH, TITLE, read_section

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"<!-- ([A-Za-z0-9_.-]+):begin -->.*?<!-- \1:end -->\n?", re.S)
FIGURE = re.compile(r"[0-9][0-9.,]*\s?(?:ms|us|µs|%|x\b|times|million|per second|a second|KiB|MiB|GiB)")
SETTINGS = {
    "8 MiB": "the checkpoint chunk size (model_store), a setting, not a measurement",
    "1 ms": "the expiry of the store's write probe (service.operations_metrics), a setting",
    "5%": "the AcogHigh5xxRate alert's threshold (docker/prometheus/alerts.yml), a setting",
}


def test_the_quoting_blocks_are_what_bench_readme_renders() -> None:
    assert readme.stale_blocks(README, DEFAULT_PATH) == [], "run: .venv/bin/python -m bench.readme"


def test_the_incomplete_streams_paragraph_quotes_its_section() -> None:
    paragraph = read_section(README, "incomplete-streams")
    section = read_section(DEFAULT_PATH, "incomplete-streams")
    assert paragraph is not None and section is not None
    quoted = re.search(r"G-mean ([0-9.]+) for OLI2DS against ([0-9.]+) for ACOG", paragraph)
    assert quoted is not None
    for figure in quoted.groups():
        assert figure in section


def test_no_figure_outside_the_blocks() -> None:
    outside = BLOCK.sub("", README.read_text())
    figures = [m.group() for m in FIGURE.finditer(outside) if m.group() not in SETTINGS]
    assert figures == []


def test_benchmarks_md_is_only_scripts_sections() -> None:
    assert BLOCK.sub("", DEFAULT_PATH.read_text()).strip() == BLOCK.sub("", TITLE).strip()


def test_a_missing_figure_is_said_not_invented(tmp_path: Path) -> None:
    """Before bench.learners measured the defaults row, the Defaults block says so."""
    text = DEFAULT_PATH.read_text()
    without = "\n".join(line for line in text.splitlines() if not line.startswith("| service defaults"))
    stripped = tmp_path / "benchmarks.md"
    stripped.write_text(without)
    block = readme.defaults_block(stripped)
    assert "not in docs/benchmarks.md yet" in block
    assert " us a label" not in block


def test_the_defaults_time_is_quoted_once_measured(tmp_path: Path) -> None:
    text = DEFAULT_PATH.read_text()
    if "| service defaults" not in text:  # as bench.learners writes the row
        text = text.replace(
            "| river-pa (peer)",
            "| service defaults (10 members) | 25,000 | | 0.2x | 0.1x | 0.1x |\n| river-pa (peer)",
            1,
        )
    measured = tmp_path / "benchmarks.md"
    measured.write_text(text)
    block = readme.defaults_block(measured)
    assert " us a label on a9a, d = 123" in block and "best of" in block


def test_the_replicas_item_quotes_what_bench_replicas_writes(tmp_path: Path) -> None:
    from bench import replicas
    from bench.report import write_section

    one = {
        "predictions_per_s": 1000.0,
        "cpu_us_per_prediction": 200.0,
        "labels_per_s": 500.0,
        "predict_p99_ms": 5.0,
    }
    two = {
        "predictions_per_s": 1500.0,
        "cpu_us_per_prediction": 210.0,
        "labels_per_s": 480.0,
        "predict_p99_ms": 6.0,
    }
    lags = [{"rate": 1000.0, "p50_ms": 1.0, "p90_ms": 2.0, "p99_ms": 3.5}] * 3
    path = tmp_path / "benchmarks.md"
    path.write_text(DEFAULT_PATH.read_text())
    write_section(path, "replicas", replicas.render({1: [one] * 3, 2: [two] * 3}, lags, 3))
    item = readme.replicas_item(path)
    assert "1,000 (1,000 to 1,000) and 1,500 (1,500 to 1,500) single predictions a second" in item
    assert "3.50 (3.50 to 3.50) ms (p99)" in item
