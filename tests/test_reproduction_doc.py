"""docs/reproduction.md stays honest: complete, runnable, self-consistent and re-derivable.

The report is written by ``python -m bench.reproduction`` (minutes of compute); these checks take
seconds. They parse the report, never regenerate it:

- every data set of the report has its section, tables and "Misses explained";
- every command it prints parses with the real ``acog evaluate`` / bench parsers;
- every verdict follows the rule stated at the top, from the printed numbers alone;
- the paper column is docs/paper-figures.md, verbatim;
- the german rows the acceptance test pins (tests/learners/test_german_reproduction.py)
  are "equal" in the report with the very same digits;
- a few cheap rows, re-run now with the report's own commands and picked settings, print
  the same digits as the report.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from bench.reproduction.cli import build_parser as build_report_parser
from bench.reproduction.extras import algorithm_of
from bench.reproduction.paper import PAPER_RESULTS, Figure, paper_rows
from bench.reproduction.plans import BLOCKS, ORDER, PLANS, Job, jobs_for
from bench.reproduction.runs import run_job
from bench.reproduction.verdicts import CELL_NAMES, RULE, our_cells, tuned, verdict
from service.cli import build_parser
from service.datasets import REGISTRY
from tests.conftest import dataset_path
from tests.learners.test_german_reproduction import CASES

DOC = Path(__file__).resolve().parents[1] / "docs" / "reproduction.md"
RUN_NAMES = {label: block for block, label in BLOCKS.items()}


def doc() -> str:
    return DOC.read_text()


def sections() -> dict[str, str]:
    """``## name`` -> the text up to the next ``## `` heading."""
    out = {}
    for chunk in doc().split("\n## ")[1:]:
        title, _, body = chunk.partition("\n")
        out[title.strip()] = body
    return out


def commands(text: str) -> list[str]:
    """Every line of every fenced code block."""
    blocks = text.split("```")[1::2]
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def comparison_rows(text: str) -> list[list[str]]:
    """The 8-cell rows of the comparison tables (algorithm .. verdict)."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 8 and cells[1] in RUN_NAMES:
            rows.append(cells)
    return rows


def test_every_data_set_has_its_section() -> None:
    found = sections()
    for name in ORDER:
        assert name in found, f"docs/reproduction.md has no section for {name}"
        body = found[name]
        for heading in (
            "### Protocol rows",
            "### Laplace rows",
            "### Misses explained",
            "### Our wall times",
        ):
            assert heading in body, f"{name}: missing {heading!r}"
        assert comparison_rows(body), f"{name}: no comparison rows"
    assert "paper's settings" in found["german"]
    assert "Summary" in found


def test_commands_parse_with_the_real_parsers() -> None:
    lines = commands(doc())
    evaluate = [line for line in lines if line.startswith("acog evaluate ")]
    bench = [line for line in lines if line.startswith("python -m bench.reproduction")]
    assert len(evaluate) >= 3 * len(ORDER) - 2 and len(bench) > len(ORDER)
    acog = build_parser()
    for line in evaluate:
        args = acog.parse_args(shlex.split(line)[1:])
        assert args.command == "evaluate"
        assert args.dataset in PLANS or args.dataset in ("a9a-train", "ijcnn1-full")
        assert args.permutations == 20
    for line in bench:
        args = build_report_parser().parse_args(shlex.split(line)[3:])
        assert args.datasets == "all" or set(args.datasets.split(",")) <= set(ORDER)


def test_every_verdict_follows_the_stated_rule() -> None:
    assert RULE in doc()
    rows = comparison_rows(doc())
    assert len(rows) > 400
    for algorithm, _run, _picked, cell, ours, paper, diff, stated in rows:
        expected_diff, expected = verdict(ours, Figure.parse(paper))
        assert (f"{expected_diff:+.3f}", expected) == (diff, stated), f"{algorithm} {cell}: {ours} vs {paper}"


def test_the_paper_column_is_paper_results_md() -> None:
    path = PAPER_RESULTS
    if not path.exists():
        pytest.fail(f"{path} is absent", pytrace=False)
    paper, unlabeled = paper_rows(path.read_text())
    assert len(unlabeled) == 12  # the headerless table, left out of the comparison
    for name, body in sections().items():
        if name not in PLANS:
            continue
        for algorithm, run, _picked, cell, _ours, printed, _diff, _verdict in comparison_rows(body):
            metric = "cost" if RUN_NAMES[run].endswith("cost") else "sum"
            index = CELL_NAMES[metric].index(cell)
            assert paper[name][algorithm].cells[metric][index].text == printed, (name, algorithm, run, cell)


def test_german_rows_pinned_by_the_acceptance_test_are_equal_here() -> None:
    rows = comparison_rows(sections()["german"])
    fixed = {(a, RUN_NAMES[run], cell): (ours, stated) for a, run, _, cell, ours, _, _, stated in rows}
    for (row, metric, _overrides), expected in CASES.items():
        for cell, value in zip(CELL_NAMES[metric], expected, strict=True):
            assert fixed[(row, f"fixed-{metric}", cell)] == (value, "equal"), (row, metric, cell)


def picked(section: str, algorithm: str, run: str) -> tuple[str, list[str]]:
    """The picked setting and the three ``ours`` cells of one row of the report."""
    rows = [r for r in comparison_rows(sections()[section]) if r[0] == algorithm and r[1] == BLOCKS[run]]
    assert rows, (section, algorithm, run)
    return rows[0][2], [r[4] for r in rows]


@pytest.mark.parametrize(
    ("name", "algorithm", "variant", "run"),
    [
        ("australian", "COG-II", "cog-II", "sum"),
        ("australian", "ACOG-Idiag", "acog-diag-I", "laplace"),
        ("german", "ROMMA", "romma", "fixed-cost"),
        ("german", "ACOG-II", "acog-II", "cost"),
        ("mushrooms", "COG-II", "cog-II", "cost"),  # on rounding ties: see test_reproduction_rounding
    ],
)
def test_cheap_rows_rerun_to_the_same_digits(name: str, algorithm: str, variant: str, run: str) -> None:
    dataset_path(*REGISTRY[name].files[0].split("/"))
    setting, cells = picked(name, algorithm, run)
    printed = commands(sections()[name])
    jobs = [j for j in jobs_for(PLANS[name], 20) if j.block == run]
    assert all(j.command in printed for j in jobs), "the report's commands are not the plan's"
    job = next(j for j in jobs if {"paper", algorithm_of(algorithm)} & set(argument(j, "--algorithms")))
    argv = list(job.argv)
    argv[argv.index("--algorithms") + 1] = variant
    if setting.startswith("eta="):
        argv += ["--eta", setting.removeprefix("eta=")]
    [row] = run_job(Job(run, tuple(argv)))["rows"]
    metric = "cost" if run.endswith("cost") else "sum"
    assert tuned(row["best"]["params"]) == setting
    ours = our_cells(row["best"], metric, PLANS[name].cost_scale)
    assert ours[: len(cells)] == cells  # Table VIII prints the headline only


def argument(job: Job, flag: str) -> list[str]:
    return job.argv[job.argv.index(flag) + 1].split(",")
