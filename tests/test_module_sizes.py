"""Every module of the product is small enough to read in one sitting: none over 500 lines, and
every module of the engine (the facade, the parts it composes and what they stand on) under 300."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("service", "model_store", "acog_client")
MAX_LINES = 500
ENGINE = ROOT / "service" / "engine"
MAX_PART_LINES = 300


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_product_module_is_over_500_lines() -> None:
    modules = [p for package in PRODUCT for p in (ROOT / package).rglob("*.py")]
    assert len(modules) > 100
    over = {str(p.relative_to(ROOT)): lines(p) for p in modules if lines(p) > MAX_LINES}
    assert not over, over


def test_each_engine_module_is_under_300_lines() -> None:
    sizes = {path.name: lines(path) for path in sorted(ENGINE.rglob("*.py"))}
    assert {"engine.py", "lifecycle.py", "registry.py", "runtime.py", "replica.py"} <= set(sizes)
    over = {name: size for name, size in sizes.items() if size >= MAX_PART_LINES}
    assert not over, over
