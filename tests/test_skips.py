"""A test never skips silently: every ``pytest.skip``, ``importorskip``, ``mark.skip`` and
``mark.skipif`` in the suite states its reason (``-ra`` prints it), and nothing the repository or
the shared directory should hold is a reason to skip (those fail: see ``tests.conftest.dataset_path``)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def skip_calls() -> list[tuple[str, int, str, ast.Call]]:
    """Every call of an attribute named skip, importorskip or skipif: (file, line, name, call)."""
    out = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr in ("skip", "importorskip", "skipif"):
                out.append((str(path.relative_to(TESTS)), node.lineno, node.func.attr, node))
    return out


def test_every_skip_states_its_reason() -> None:
    silent = []
    for where, line, name, call in skip_calls():
        reason = [k for k in call.keywords if k.arg in ("reason", "msg")]
        if not (reason or (name == "skip" and call.args)):
            silent.append(f"{where}:{line}")
    assert silent == []


def test_nothing_shared_or_in_the_repository_is_a_reason_to_skip() -> None:
    for where, line, _name, call in skip_calls():
        text = ast.unparse(call)
        assert "shared" not in text and "absent" not in text, f"{where}:{line}: {text}"
