"""bench.service_load says when other work shared the machine: load averages over the cores, or CPU
time the hypervisor gave other guests (steal, read from this machine's /proc/stat)."""

from __future__ import annotations

import os

from bench.service_load import cpu_ticks, steal_share
from bench.service_load_report import STEAL_WARNING, load_lines


def test_steal_is_read_from_proc_stat() -> None:
    before = cpu_ticks()
    sum(i * i for i in range(200_000))  # some CPU time passes
    after = cpu_ticks()
    assert after[1] >= before[1] > 0
    assert 0.0 <= steal_share(before, after) <= 1.0
    assert steal_share(before, before) == 0.0


def test_the_report_warns_only_past_the_thresholds() -> None:
    cores = os.cpu_count() or 1
    assert load_lines([0.5, 0.5, 0.5], 0.0) == []
    assert load_lines(None, STEAL_WARNING / 2) == []
    (blank, busy) = load_lines([cores + 1.0, 1.0, 1.0], None)
    assert blank == "" and "load averages" in busy
    (_, stolen) = load_lines(None, 0.125)
    assert "12.5 %" in stolen and "steal" in stolen
    assert len(load_lines([cores + 1.0, 1.0, 1.0], 0.125)) == 4
