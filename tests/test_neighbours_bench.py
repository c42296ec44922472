"""The kNN study's candidate rosters (``bench.quality``): the helper that swaps the kNN family builds
the service's default model when given the roster's own options, and its table renders from caches."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench.quality.neighbours import main as neighbours_main
from bench.quality.protocol import Stream
from bench.quality.runs import cache_path
from bench.quality.systems import service_config, with_neighbours
from service.learners.roster import NEIGHBOURS_OPTIONS

from .learners.streams import same_state, sparse_stream


def test_the_roster_s_own_options_give_the_default_model_bit_for_bit() -> None:
    X, y = sparse_stream(120, 5, density=0.8, seed=2)
    stream = Stream("stream", X, y, np.arange(120)[None, :], X)
    config = service_config(stream, "sum")
    mine, served = with_neighbours(config, NEIGHBOURS_OPTIONS), config.build_learner()
    assert mine.member_algorithms == served.member_algorithms and mine.member_forms == served.member_forms
    assert np.array_equal(mine.run(X, y).scores, served.run(X, y).scores)
    assert same_state(mine.to_state(), served.to_state())
    assert "knn" not in with_neighbours(config, None).member_algorithms


def test_the_table_renders_from_the_caches(tmp_path: Path) -> None:
    counts = [[10, 90, 2, 5], [10, 90, 3, 4]]
    record = {m: {"counts": counts, "seconds": [0.01, 0.01]} for m in ("sum", "cost")}
    records = {"service:knn-none": record, "service:knn-std": record}
    result = {"name": "german", "n": 100, "d": 24, "records": records}
    cache_path(tmp_path, "german").write_text(json.dumps(result))
    out = tmp_path / "doc.md"
    assert neighbours_main(["--tuning-dir", str(tmp_path), "--output", str(out)]) == 0
    text = out.read_text()
    assert "<!-- neighbours:begin -->" in text and "| mean of 1 | | | service:knn-std |" in text
    assert "| service:knn-std | defaults, kNN" in text and "| 100.0 |" in text


def test_the_cost_table_times_both_models_on_both_paths() -> None:
    from bench.quality.neighbours import cost_lines

    lines = cost_lines([3], 30, 1)
    assert lines[0].startswith("| d | predict + learn") and lines[2].startswith("| 3 | ")
    assert len(lines[2].split("|")) == 9
