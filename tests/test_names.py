"""Each name pattern and the algorithm list are defined once and used everywhere.

The model-name pattern lives in :mod:`model_store.ids`; the API's body and path schemas, and the
prediction-id pattern, are built from it. The algorithm names are the learner registry's; the
configuration schema (and so ``openapi.yaml``) follows it.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from model_store import MODEL_NAME_MAX_LENGTH, MODEL_NAME_REGEX, parse_prediction_id, validate_model_name
from service.learners import ALGORITHMS
from service.model_config import ModelConfig

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("service", "model_store", "research", "bench", "tests", "docker", "examples")


def _openapi() -> dict:
    return yaml.safe_load((ROOT / "openapi.yaml").read_text())


def test_the_model_name_pattern_is_written_once() -> None:
    """No source file but model_store/ids.py spells the pattern out (this test spells it to look)."""
    spelled = "[A-Za-z0-9][A-Za-z0-9_.-]"
    found = sorted(
        str(path.relative_to(ROOT))
        for top in SOURCES
        for path in (ROOT / top).rglob("*.py")
        if spelled in path.read_text() and path.name not in ("ids.py", "test_names.py")
    )
    assert found == []


def test_the_api_uses_the_store_pattern_for_bodies_and_paths() -> None:
    patterns = set()
    lengths = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "pattern" in node and "Za-z" in str(node["pattern"]):
                patterns.add(node["pattern"])
                lengths.add(node.get("maxLength"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(_openapi())
    assert patterns == {MODEL_NAME_REGEX}
    assert lengths == {MODEL_NAME_MAX_LENGTH}


def test_a_prediction_id_carries_any_valid_model_name() -> None:
    longest = "a" * MODEL_NAME_MAX_LENGTH
    for name in ("m", "cards", "a.b-c_d", longest):
        validate_model_name(name)
        assert parse_prediction_id(f"{name}:1:1a2-0123456789abcdef").model == name
    assert re.fullmatch(MODEL_NAME_REGEX, longest + "a") is None


def test_the_algorithm_names_are_the_registry() -> None:
    schema = ModelConfig.model_json_schema()["properties"]["algorithm"]
    enum = next(option["enum"] for option in schema["anyOf"] if "enum" in option)
    assert enum == list(ALGORITHMS)
    served = _openapi()["components"]["schemas"]["ModelConfig"]["properties"]["algorithm"]
    assert next(option["enum"] for option in served["anyOf"] if "enum" in option) == list(ALGORITHMS)
