"""The README's Python session is what examples/readme_session.py runs (it writes the block)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def session_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_session", ROOT / "examples" / "readme_session.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_shows_the_statements_the_script_runs() -> None:
    script = session_script()
    block = (ROOT / "README.md").read_text().split("<!-- client-session:begin -->")[1]
    block = block.split("<!-- client-session:end -->")[0]
    typed = [line for line in block.splitlines() if line.startswith((">>> ", "... ")) or line == "..."]
    assert typed == [line for statement in script.SESSION for line in script.prompted(statement)]
    assert "Prediction(prediction_id='cards:1:" in block and "422 features.dense.2" in block


def test_the_readme_curl_session_is_what_examples_curl_session_runs() -> None:
    import re
    import sys

    sys.path.insert(0, str(ROOT / "examples"))  # curl_session imports readme_session's free_port
    try:
        spec = importlib.util.spec_from_file_location("curl_session", ROOT / "examples" / "curl_session.py")
        assert spec is not None and spec.loader is not None
        script = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(script)
    finally:
        sys.path.remove(str(ROOT / "examples"))
    block = (
        (ROOT / "README.md").read_text().split("<!-- session:begin -->")[1].split("<!-- session:end -->")[0]
    )
    pid = re.compile(r"cards:1:[0-9a-f]+-[0-9a-f]+")
    typed = [pid.sub("PID", line[2:]) for line in block.splitlines() if line.startswith("$ ")]
    assert typed == [script.fill(command, ["PID"] * 3) for command in script.COMMANDS]
