"""Every module of the product is small enough to read in one sitting: none over 500 lines, and
each part of the engine (the facade and the parts it composes) under 300."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("service", "model_store", "acog_client")
MAX_LINES = 500
ENGINE_PARTS = ("engine", "lifecycle", "registry", "changes", "predictor", "labels", "instances")
MAX_PART_LINES = 300


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_product_module_is_over_500_lines() -> None:
    modules = [p for package in PRODUCT for p in (ROOT / package).rglob("*.py")]
    assert len(modules) > 100
    over = {str(p.relative_to(ROOT)): lines(p) for p in modules if lines(p) > MAX_LINES}
    assert not over, over


def test_each_engine_part_is_under_300_lines() -> None:
    sizes = {part: lines(ROOT / "service" / "engine" / f"{part}.py") for part in ENGINE_PARTS}
    assert all(size < MAX_PART_LINES for size in sizes.values()), sizes
