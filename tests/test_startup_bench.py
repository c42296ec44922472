"""bench.startup's section renders its measurements, and the README's Start-up item quotes it."""

from __future__ import annotations

from pathlib import Path

from bench import readme, startup
from bench.report import DEFAULT_PATH, read_section, write_section


def test_the_section_and_the_readme_item_quote_the_same_starts(tmp_path: Path) -> None:
    def run(ready: float, p99: float) -> dict[str, float]:
        return {"listening_s": 1.5, "ready_s": ready, "p50_ms": 1.5, "p99_ms": p99, "max_ms": 9.0}

    runs = {
        "cold-models": [run(90.0, 4.0), run(110.0, 6.0), run(100.0, 5.0)],
        "cold-all": [run(200.0, 3.0)] * 3,
        "warm": [run(2.0, 2.0), run(3.0, 2.5), run(2.5, 3.0), run(2.5, 3.0), run(2.5, 3.0)],
    }
    text = startup.render(runs, 3, 5)
    assert (
        "| cold cache, `ACOG_WARM_UP=models` (default) | 3 | 1.5 (1.5 to 1.5) | 100.0 (90.0 to 110.0) | "
        "40.00 (36.00 to 44.00) |" in text
    )
    path = tmp_path / "benchmarks.md"
    path.write_text(DEFAULT_PATH.read_text())
    write_section(path, startup.SECTION, text)
    item = readme.startup_item(path)
    assert "it answers 1.5 (1.5 to 1.5) s after launch" in item
    assert "100.0 (90.0 to 110.0) s after launch with a cold kernel cache" in item
    assert "200.0 (200.0 to 200.0) s with `ACOG_WARM_UP=all`" in item
    assert "2.5 (2.0 to 3.0) s with a warm one" in item
    assert (
        f"the first {startup.REQUESTS} requests after a cold start have a p99 of 5.00 (4.00 to 6.00) ms"
        in item
    )


def test_without_the_section_the_item_says_so(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks.md"
    path.write_text("# Benchmarks\n")
    assert read_section(path, startup.SECTION) is None
    assert "not in docs/benchmarks.md yet" in readme.startup_item(path)
