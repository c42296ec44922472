"""The import contracts of pyproject.toml's ``[tool.importlinter]`` hold (import-linter): the product
never imports the benchmarks or the tests, the learners never import the API, the engine, the store
or telemetry, the store never imports the service, and the API sits over the engine over the learners."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.split("Contracts:")[-1].replace("0 broken", "")
