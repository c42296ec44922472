"""bench.request_metrics runs its three stacks and prints the ratios."""

from __future__ import annotations

import pytest

from bench.request_metrics import main


def test_the_bench_prints_each_stack_and_the_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--requests", "50", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    for stack in ("none", "before", "now"):
        assert f"  {stack}" in out
    assert "now / before = " in out and "now / none   = " in out
