"""The PromQL helpers the dashboard and alert tests rely on find what they should."""

from __future__ import annotations

from pathlib import Path

import pytest

from .promql import Query, metric_names, promtool_check, substitute_variables


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('acog_weighted_sum{model=~"default"}', {"acog_weighted_sum"}),
        (
            "histogram_quantile(0.99, sum by (le, route) (rate(acog_request_duration_seconds_bucket"
            '{route=~"/predict|/feedback"}[5m])))',
            {"acog_request_duration_seconds_bucket"},
        ),
        (
            "sum by (model) (rate(a_total[1m])) / ignoring(x) group_left() sum(rate(b_total[1m])) "
            "unless on(model) c > bool 1e-3",
            {"a_total", "b_total", "c"},
        ),
        ("x offset 5m and y @ 1609746000 or z[5m:1m]", {"x", "y", "z"}),
        ('label_replace(up, "dst", "$1", "instance", "(.*):.*")', {"up"}),
        ("sum(rate(acog_labels_total[1m])) by (class) * 100", {"acog_labels_total"}),
        ("vector(1) + scalar(time())", set()),
    ],
)
def test_metric_names(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_metric_names_refuses_name_matchers() -> None:
    with pytest.raises(ValueError):
        metric_names('{__name__=~"acog_.*"}')


def test_substitute_variables() -> None:
    expr = 'rate(x{model=~"$model", m="${model}", n="[[model]]", o="${model:regex}"}[$__rate_interval])'
    assert substitute_variables(expr, {"model": "default"}) == (
        'rate(x{model=~"default", m="default", n="default", o="default"}[1m])'
    )
    with pytest.raises(KeyError):
        substitute_variables('x{a="$undefined"}', {})


def test_promtool_check_parses_promql(tmp_path: Path) -> None:
    good = Query("good", "sum by (model) (rate(acog_updates_total[1m]))", "t:good")
    assert promtool_check([good], tmp_path).returncode == 0
    for bad in ("sum by (model) (rate(acog_updates_total[1m])", "rate(acog_weighted_sum)", "no_such_fn(x)"):
        result = promtool_check([good, Query("bad", bad, "t:bad")], tmp_path)
        assert result.returncode != 0, bad
