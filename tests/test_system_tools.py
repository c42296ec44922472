"""Tests that need a program beyond Python skip, saying how to get it, on a machine without it, and
fail instead under ``ACOG_REQUIRE_SYSTEM_TOOLS=1`` (which ``.ci/run`` sets)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .support.system_tools import REQUIRE, system_tool

ROOT = Path(__file__).resolve().parents[1]


def test_a_tool_on_the_path_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "promtool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert system_tool("promtool") == str(tool)


def test_a_missing_tool_skips_saying_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(
        pytest.skip.Exception, match=r"docker-compose is not installed.*bash \.ci/system-deps"
    ):
        system_tool("docker-compose")


def test_a_missing_tool_fails_when_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(
        pytest.fail.Exception, match=r"promtool is not installed.*ACOG_REQUIRE_SYSTEM_TOOLS=1"
    ):
        system_tool("promtool")


@pytest.mark.parametrize(("required", "outcome"), [("", "skipped"), ("1", "failed")])
def test_the_compose_tests_on_a_machine_without_docker_compose(
    tmp_path: Path, required: str, outcome: str
) -> None:
    env = {**os.environ, "PATH": str(tmp_path), REQUIRE: required}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/deploy/test_compose.py", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = result.stdout.strip().splitlines()[-1]
    assert outcome in summary, result.stdout[-3000:]
    assert "bash .ci/system-deps" in result.stdout, result.stdout[-3000:]
    assert result.returncode == (0 if outcome == "skipped" else 1), result.stdout[-3000:]
