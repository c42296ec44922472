"""examples/credit_delayed_labels.py runs against a real service and reports what it did."""

from __future__ import annotations

import re
import subprocess
import sys

from ..conftest import dataset_path
from ..support.service_process import ROOT
from .conftest import Served


def test_the_credit_walk_through_runs(served: Served) -> None:
    dataset_path("german", "german.mat")
    out = subprocess.run(
        [sys.executable, "examples/credit_delayed_labels.py", served.service.url, "--lag", "100"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "1000 outcomes learned, each 100 applications late" in text, text
    assert "duplicate=True, model version 1000" in text, text
    counts = re.search(r"missed bad loans (\d+) of (\d+), refused good ones (\d+) of (\d+)", text)
    assert counts is not None, text
    m_p, t_p, m_n, t_n = map(int, counts.groups())
    assert (t_p, t_n) == (300, 700)
    cost = re.search(r"the model ([\d.]+)", text)
    assert cost is not None and float(cost.group(1)) == round(5 / 6 * m_p + 1 / 6 * m_n, 1)
    assert served.client.get_model("credit").version == 1000
