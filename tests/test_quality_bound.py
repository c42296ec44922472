"""The goal's bound in hindsight: the best row of the run on each data set, averaged, next to what the
goal asks; a goal above it cannot be met by choosing among the systems run."""

from __future__ import annotations

from typing import Any

from bench.quality.summary import bound_lines, part_lines


def counts(t_p: int, t_n: int, m_p: int, m_n: int) -> dict[str, Any]:
    return {"counts": [[t_p, t_n, m_p, m_n]], "seconds": [0.1]}


def peers(best_sum: float, best_cost: float) -> list[dict[str, Any]]:
    """Summary rows of two peers whose best mean sum and cost are these."""
    return [
        {"group": "peer", "sum": best_sum, "cost1000": best_cost + 5.0},
        {"group": "peer", "sum": best_sum - 5.0, "cost1000": best_cost},
    ]


def result(name: str, **rows: tuple[int, int]) -> dict[str, Any]:
    """A data set of 10 positives and 90 negatives; each row's (positive, negative) mistakes."""
    records = {key: {m: counts(10, 90, *mistakes) for m in ("sum", "cost")} for key, mistakes in rows.items()}
    return {"name": name, "n": 100, "records": records}


def test_the_bound_takes_each_data_sets_best_row_whoever_it_is() -> None:
    results = [
        result("a", **{"service:defaults": (1, 0), "peer:river-knn": (2, 0)}),
        result("b", **{"service:defaults": (5, 0), "peer:river-knn": (0, 9)}),
    ]
    # sums: a 95 (defaults), b 95 (kNN: 50 + 50 x 81/90); costs/1000: a 9 (defaults), b 9 (kNN)
    (line,) = bound_lines(results, peers(90.0, 20.0))
    assert "mean sum 95.00 % against the goal's 92.00 % (above it by 3.00 points)" in line
    assert "mean cost/1000 9.00 against the goal's 17.00 (within it)" in line
    (line,) = bound_lines(results, peers(94.0, 10.0))
    assert "(below it by 1.00 points)" in line
    assert "against the goal's 8.50 (above it)" in line


def test_hindsight_tuned_rows_are_not_a_pick() -> None:
    rows = {"service:defaults": (5, 0), "hindsight:paper@1": (0, 0)}
    (line,) = bound_lines([result("a", **rows)], peers(0.0, 1.0))
    assert "mean sum 75.00 %" in line
    assert "hindsight eta" not in line


def test_no_bound_without_peers() -> None:
    assert bound_lines([result("a", **{"service:defaults": (0, 0)})], []) == []


def test_each_part_of_a_set_shows_its_own_margin() -> None:
    results = [
        result("synth", **{"service:defaults": (0, 9), "peer:river-knn": (5, 0)}),
        result("shipped", **{"service:defaults": (5, 0), "peer:river-knn": (0, 9)}),
    ]
    first, second = part_lines(results, {"generators": {"synth"}, "the rest": {"shipped"}})
    # sums: 95 against 75, and 75 against 95; costs/1000: 9 against 45, and 45 against 9
    assert first.startswith("- On generators (1): defaults 95.00 % vs river kNN")
    assert "(+20.00 points)" in first and "cost/1000 9.00 vs river kNN, k = 5 (std) 45.00 (0.200x)" in first
    assert second.startswith("- On the rest (1): defaults 75.00 %") and "(-20.00 points)" in second
    assert part_lines(results, {"nothing": {"absent"}}) == []
