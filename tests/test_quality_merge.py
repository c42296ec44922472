"""``bench.quality --only`` reruns some rows of a data set over its cached run: the merged cache keeps
every other row, takes the new ones, and counts the data set's compute without the replaced rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.quality.cli import merged


def row(seconds: float) -> dict[str, object]:
    return {m: {"counts": [[1, 2, 3, 4]], "seconds": [seconds]} for m in ("sum", "cost")}


def run(n: int, seconds: float, permutations: int, **rows: dict[str, object]) -> dict[str, object]:
    """A data set's cached result: ``n`` rows of 24 features, its compute and its rows."""
    return {"n": n, "d": 24, "permutations": permutations, "seconds": seconds, "records": rows}


def test_a_rerun_row_replaces_its_cached_row_and_its_seconds(tmp_path: Path) -> None:
    path = tmp_path / "german.json"
    path.write_text(json.dumps(run(100, 50.0, 3, a=row(10.0), b=row(5.0))))
    out = merged(path, run(100, 8.0, 1, b=row(3.0), c=row(1.0)))
    assert out["records"] == {"a": row(10.0), "b": row(3.0), "c": row(1.0)}
    # 50 s cached, less row b's two passes (2 x 5 s), plus the rerun's 8 s
    assert out["seconds"] == pytest.approx(48.0)
    assert out["permutations"] == 3


def test_another_data_set_shape_is_not_merged(tmp_path: Path) -> None:
    path = tmp_path / "german.json"
    path.write_text(json.dumps(run(99, 1.0, 3, a=row(1.0))))
    result = run(100, 8.0, 1, b=row(3.0))
    assert merged(path, result) is result
