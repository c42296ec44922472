"""The import contracts of pyproject.toml's ``[tool.importlinter]`` hold (import-linter): no import
circle anywhere (deferred imports included), the layers of the service and of the engine import
only downwards, the product never imports the benchmarks or the tests, the learners are a library
without the server, the store never imports the service, and the client none of the server.

And what those contracts cannot see, because it is about what an ``import`` loads at run time:
the learners and the client each import in a fresh interpreter without the server's dependencies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SERVER = ("fastapi", "starlette", "uvicorn", "pydantic", "redis", "prometheus_client", "model_store")


def test_the_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.split("Contracts:")[-1].replace("0 broken", "")


def loaded(statement: str) -> set[str]:
    """The top-level packages, and the ``service`` modules, a fresh interpreter holds after
    ``statement``."""
    code = (
        f"import sys; {statement}; "
        "print(' '.join(sorted({m if m.startswith('service.') else m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_learners_import_as_a_library_without_the_server() -> None:
    modules = loaded("import service.learners")
    assert not modules & set(SERVER), sorted(modules & set(SERVER))
    assert {"numpy", "numba", "scipy"} <= modules
    service = {m for m in modules if m.startswith("service.")}
    outside = {m for m in service if not m.startswith("service.learners")}
    assert outside <= {"service.jit_cache", "service.normalization"}, sorted(outside)


@pytest.mark.parametrize("statement", ["import service.client", "import service"])
def test_the_client_loads_no_numpy_numba_or_fastapi(statement: str) -> None:
    modules = loaded(statement)
    heavy = {"numpy", "numba", "scipy", "fastapi", "starlette", "uvicorn", "redis", "model_store"}
    assert not modules & heavy, sorted(modules & heavy)
