"""Fixtures for the deployment tests: the compose file as Compose reads it, the Dockerfile, the dashboard."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..support.system_tools import system_tool
from . import dockerfile, promql

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"


def compose_command() -> list[str]:
    """Debian's ``docker-compose`` (installed by .ci/system-deps); it needs no Docker engine."""
    return [system_tool("docker-compose")]


def run_compose_config(compose_file: Path) -> subprocess.CompletedProcess[str]:
    """``docker-compose -f FILE config``: validates against the Compose schema and normalises."""
    return subprocess.run(
        [
            *compose_command(),
            "--project-directory",
            str(compose_file.parent),
            "-f",
            str(compose_file),
            "config",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=compose_file.parent,
    )


@pytest.fixture(scope="session")
def compose() -> dict[str, Any]:
    """docker-compose.yml as Compose resolved it (absolute bind paths, long-form depends_on)."""
    result = run_compose_config(COMPOSE_FILE)
    assert result.returncode == 0, f"docker-compose config failed:\n{result.stderr}"
    config: dict[str, Any] = yaml.safe_load(result.stdout)
    return config


@pytest.fixture(scope="session")
def stages() -> list[dockerfile.Stage]:
    return dockerfile.stages(dockerfile.DOCKERFILE.read_text())


@pytest.fixture(scope="session")
def dashboard() -> dict[str, Any]:
    return promql.load_dashboard()
