"""The README's commands are the ones CI runs, and every command it shows works."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from service.cli import build_parser

from .conftest import dataset_path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def shell_lines() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_command = shell_lines()[1]
    assert "pytest" in test_command
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_every_acog_command_in_the_readme_parses() -> None:
    commands = [line for line in README.splitlines() if re.search(r"(^|/)acog (evaluate|replay|serve)", line)]
    assert commands
    for line in commands:
        text = line.strip().strip("`")
        words = shlex.split(text[text.index("acog ") :].split("`")[0])
        build_parser().parse_args(words[1:])


def test_the_readme_evaluate_example_prints_the_papers_digits() -> None:
    dataset_path("german", "german.mat")
    [line] = [line for line in shell_lines() if "acog evaluate" in line]
    out = subprocess.run(shlex.split(line), cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "62.511 ± 1.190" in out  # ACOG-II, Table II
    assert "62.281 ± 1.428" in out  # ACOG-IIdiag


def test_the_session_is_pasted_from_a_run() -> None:
    session = README.split("<!-- session:begin -->")[1].split("<!-- session:end -->")[0]
    assert "SESSION" not in session and '"prediction_id"' in session


@pytest.mark.parametrize("link", sorted(set(re.findall(r"\]\(([^)#]+)\)", README))))
def test_every_linked_file_exists(link: str) -> None:
    if not link.startswith("http"):
        assert (ROOT / link).exists(), link


LAYOUT_ROOTS = ("service", "model_store", "research", "bench", "tests")


def layout_block() -> str:
    return README.split("## Layout", 1)[1].split("```", 2)[1]


def layout_paths() -> set[str]:
    """Every path the Layout block names (``service/api/``, ``service/cli.py``, ...), without a
    trailing slash."""
    found = re.findall(r"(?<![\w/.])((?:[a-z_]+/)+(?:[\w]+\.py)?)", layout_block())
    return {path.rstrip("/") for path in found}


def modules_under(root: str) -> list[str]:
    """The top-level modules and packages of ``root`` (a .py file, or a directory holding Python)."""
    out = []
    for entry in sorted((ROOT / root).iterdir()):
        if entry.name.startswith((".", "__")):
            continue
        if (entry.is_file() and entry.suffix == ".py") or (entry.is_dir() and any(entry.rglob("*.py"))):
            out.append(f"{root}/{entry.name}")
    return out


@pytest.mark.parametrize("module", [m for root in LAYOUT_ROOTS for m in modules_under(root)])
def test_the_layout_names_every_module_or_its_directory(module: str) -> None:
    named = layout_paths()
    parts = module.split("/")
    ancestors = {"/".join(parts[:i]) for i in range(1, len(parts) + 1)}
    assert ancestors & named, f"{module} is not in the README's Layout block (nor is a directory above it)"


def test_every_path_in_the_layout_exists() -> None:
    named = layout_paths()
    assert {"service/api", "model_store", "bench", "tests"} <= named
    for path in named:
        assert (ROOT / path).exists(), f"the Layout block names {path}, which does not exist"
