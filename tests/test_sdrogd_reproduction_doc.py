"""The SDROGD section of docs/reproduction.md stays honest (written by ``python -m bench.reproduction
--paper sdrogd``; these checks parse it, and re-run german's cheap command).

- the paper column is the paper's text, verbatim;
- every verdict follows the rule the section states, and every target line is right;
- every command parses with the real parsers, and german's re-runs to the printed digits;
- the ACOG report, when it rewrites the file, keeps this section (``bench.report.carry_sections``).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from bench.report import carry_sections
from bench.reproduction.cli import build_parser as build_report_parser
from bench.reproduction.sdrogd import (
    ORDER,
    PAPER,
    PAPERS_ENV,
    PRINTED,
    RULE,
    TITLES,
    figure,
    run,
    target_verdict,
    verdict,
)
from service.cli import build_parser
from tests.conftest import dataset_path

DOC = Path(__file__).resolve().parents[1] / "docs" / "reproduction.md"


def section() -> str:
    text = DOC.read_text()
    assert "<!-- sdrogd:begin -->" in text, "docs/reproduction.md has no SDROGD section"
    return text.split("<!-- sdrogd:begin -->")[1].split("<!-- sdrogd:end -->")[0]


def rows() -> list[list[str]]:
    """The 8-cell rows of the accuracy/AUC table."""
    out = []
    for line in section().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 8 and cells[2] in ("accuracy %", "AUC"):
            out.append(cells)
    return out


def test_printed_figures_are_the_papers_text() -> None:
    if not os.environ.get(PAPERS_ENV):
        pytest.skip(f"the paper's text is not redistributable: set {PAPERS_ENV} to a folder with sdrogd.txt")
    if not PAPER.exists():
        pytest.fail(f"{PAPER} not found ({PAPERS_ENV} is set)", pytrace=False)
    text = PAPER.read_text()
    for printed in PRINTED.values():
        for value in (printed.sdrogd, printed.pegasos):
            assert value in text, value
        if printed.auc is not None:
            assert f"SDROGD: {printed.auc}" in text


@pytest.mark.parametrize(
    ("ours", "printed", "expected"),
    [
        ("74.90 ± 1.34", "74.90 ± 1.34", ("+0.00", "equal")),
        ("73.90 ± 2.95", "74.90 ± 1.34", ("-1.00", "within spread")),
        ("72.00 ± 0.10", "74.90 ± 1.34", ("-2.90", "miss")),
        ("0.8850", "0.8850", ("+0.0000", "equal")),
        ("0.8875", "0.8850", ("+0.0025", "miss")),
    ],
)
def test_the_verdict_rule(ours: str, printed: str, expected: tuple[str, str]) -> None:
    assert verdict(ours, printed) == expected


def test_every_verdict_and_target_follows_the_rule() -> None:
    assert RULE in section()
    found = rows()
    assert {r[0] for r in found} == {TITLES[n] for n in ORDER}
    by_title = {TITLES[n]: n for n in ORDER}
    for title, algorithm, measure, ours, paper, diff, stated, target in found:
        mine = ours if measure == "accuracy %" else ours.split(" ±")[0]
        assert verdict(mine, paper) == (diff, stated), (title, algorithm, measure)
        printed = PRINTED[by_title[title]]
        assert (
            paper == {"SDROGD": printed.sdrogd, "Pegasos": printed.pegasos}[algorithm] or paper == printed.auc
        )
        if measure == "accuracy %" and algorithm == "SDROGD":
            assert target == target_verdict(by_title[title], float(ours.split("±")[0]))


def test_commands_parse_with_the_real_parsers() -> None:
    blocks = section().split("```")[1::2]
    lines = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    evaluate = [line for line in lines if line.startswith("acog evaluate ")]
    assert {shlex.split(line)[2] for line in evaluate} == set(ORDER)
    for line in evaluate:
        args = build_parser().parse_args(shlex.split(line)[1:])
        assert args.protocol == "sdrogd" and args.repeats == 5
    [bench] = [line for line in lines if line.startswith("python -m bench.reproduction")]
    args = build_report_parser().parse_args(shlex.split(bench)[3:])
    assert args.paper == "sdrogd" and args.repeats == 5


def test_german_reruns_to_the_printed_digits() -> None:
    dataset_path("german", "german.mat")
    result = run("german", intercept=True, repeats=5)
    for algorithm in ("sdrogd", "pegasos"):
        ours = figure(result["results"][algorithm]["accuracy"])
        label = "SDROGD" if algorithm == "sdrogd" else "Pegasos"
        [row] = [r for r in rows() if r[0] == "german" and r[1] == label and r[2] == "accuracy %"]
        assert row[3] == ours


def test_the_acog_report_keeps_the_sdrogd_section() -> None:
    old = "# report\n\nold body\n<!-- sdrogd:begin -->\nkept\n<!-- sdrogd:end -->\n"
    assert "<!-- sdrogd:begin -->\nkept\n<!-- sdrogd:end -->" in carry_sections(old, "# report\n\nnew body\n")
