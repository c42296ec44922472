"""bench.incomplete_streams: what its report claims holds on a small stream, and the data decides
the README's recommendation."""

from __future__ import annotations

import numpy as np

from bench.incomplete_streams import SYSTEMS, Cell, recommendation, served
from research.protocols import oli2ds as protocol
from service.datasets import read_label_last_csv

from .conftest import dataset_path


def test_acog_zero_filled_and_named_predict_alike() -> None:
    """To a linear learner an absent name is a zero: the two ACOG rows are the same system."""
    data = read_label_last_csv(dataset_path("oli2ds", "wdbc.csv.xz"))
    X = protocol.standardise(data.X.toarray())
    order = protocol.shuffled_orders(len(data.y), 1)[0][:150]
    rows, y = protocol.incomplete_rows(X[order], "capricious", 0), data.y[order].astype(np.int64)
    linear = {"auto_members": "linear", "normalize": "l2"}  # the forest and standardiser tell them apart
    named, zero_filled = served(linear)(rows, y, 30, "sum"), served(linear, named=False)(rows, y, 30, "sum")
    assert np.array_equal(named, zero_filled)
    oli2ds = served({"algorithm": "oli2ds"})(rows, y, 30, "sum")
    assert not np.array_equal(oli2ds, named)


def cells(oli2ds: tuple[float, float], acog: tuple[float, float]) -> dict[tuple[str, str, str], Cell]:
    """Every stream alike, ten rounds with a little spread: ``(G-mean, cost)`` of OLI2DS and ACOG."""
    noise = np.linspace(-1.0, 1.0, 10)
    out = {}
    for scheme in protocol.SCHEMES:
        for system in SYSTEMS:
            g, c = oli2ds if system.startswith("OLI2DS") else acog
            g_mean = list(g + 0.001 * noise)
            out["wdbc", scheme, system] = Cell(
                f1=g_mean, g_mean=g_mean, sum=[100 * g] * 10, cost=list(c + noise)
            )
    return out


def test_the_recommendation_follows_the_data() -> None:
    acog_wins = recommendation(cells(oli2ds=(0.90, 20.0), acog=(0.92, 20.0)), ["wdbc"])
    assert "ACOG with named features beats OLI2DS" in acog_wins  # better G-mean, the same cost
    assert "OLI2DS ahead on 0 of 2 streams" in acog_wins
    oli2ds_wins = recommendation(cells(oli2ds=(0.93, 10.0), acog=(0.92, 20.0)), ["wdbc"])
    assert "OLI2DS beats ACOG with named features" in oli2ds_wins
    assert '"algorithm": "oli2ds"' in oli2ds_wins
    mixed = recommendation(cells(oli2ds=(0.93, 30.0), acog=(0.92, 20.0)), ["wdbc"])
    assert "neither dominates: OLI2DS has the better G-mean and ACOG the lower cost" in mixed
    tie = recommendation(cells(oli2ds=(0.92, 20.0), acog=(0.92, 20.0)), ["wdbc"])
    assert "tie" in tie and "stays the recommendation" in tie
