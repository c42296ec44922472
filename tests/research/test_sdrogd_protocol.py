"""``acog evaluate --protocol sdrogd``: the grid kernel is the learner, and the protocol runs end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from research.protocols import sdrogd as protocol
from research.protocols.sdrogd_grid import grid_pass
from service.cli import main
from service.datasets import load
from service.learners import create
from tests.conftest import dataset_path


@pytest.mark.parametrize("variant", [{}, {"printed": True}, {"upper": True}])
def test_grid_pass_equals_one_learner_per_setting(variant: dict) -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 7)) * (rng.random((400, 7)) < 0.7)
    y = np.where(X @ rng.normal(size=7) + 0.3 > 0, 1, -1)
    Xa = sp.csr_matrix(np.hstack([X, np.ones((400, 1))]))
    Xa.eliminate_zeros()
    etas = np.repeat([0.0, 0.4, 1.0], 3)
    lams = np.tile([0.0, 0.125, 2.0], 3)
    W, steps, refused = grid_pass(Xa, y, etas, lams, 3, batch_size=9, **variant)
    for j in range(len(etas)):
        learner = create(
            "sdrogd", n_features=7, fit_intercept=True, lda_weight=etas[j], lam=lams[j],
            sketch_fraction=3 / 8, batch_size=9, eq17="printed" if variant.get("printed") else "expanded",
            sketch_rows="upper" if variant.get("upper") else "all",
        )  # fmt: skip
        learner.run(X, y)
        learner.flush()
        np.testing.assert_allclose(W[j], learner.weights(), rtol=1e-9, atol=1e-12)
        batch = learner.describe()["batch"]
        assert (steps[j], refused[j]) == (batch["steps"], batch["refused_steps"])


def test_protocol_on_german_reduced_grid() -> None:
    dataset_path("german", "german.mat")
    settings = protocol.SDROGDProtocol(repeats=2, grid=protocol.REDUCED_GRID)
    results = protocol.evaluate(load("german"), settings)
    assert [r.algorithm for r in results] == ["sdrogd", "pegasos"]
    for result in results:
        assert len(result.repeats) == 2
        for rep in result.repeats:
            assert 60.0 < rep.accuracy < 90.0 and 0.5 < rep.auc <= 1.0
            assert 60.0 < rep.all_negative < 80.0  # german is 70 % negative
    chosen = results[0].repeats[0].params
    assert chosen["sketch_fraction"] in protocol.REDUCED_GRID.sketch_fraction
    again = protocol.evaluate(load("german"), settings)  # seeded: the same figures
    assert again[0].summary()["accuracy"] == results[0].summary()["accuracy"]


def test_the_command_says_which_protocol_ran(capsys: pytest.CaptureFixture[str]) -> None:
    dataset_path("german", "german.mat")
    argv = ["evaluate", "german", "--protocol", "sdrogd", "--grid", "reduced", "--repeats", "1"]
    assert main([*argv, "--algorithms", "pegasos"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("protocol sdrogd: german, 1000 x 24") and "pegasos" in out and "sdrogd " not in out
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["protocol"] == "sdrogd" and doc["settings"]["standardize"] is True
    assert [r["algorithm"] for r in doc["results"]] == ["sdrogd", "pegasos"]
    assert main([*argv, "--algorithms", "acog"]) == 2
    assert "--algorithms" in capsys.readouterr().err


def test_the_online_protocol_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    dataset_path("german", "german.mat")
    argv = ["evaluate", "german", "--algorithms", "cog-II", "--metric", "sum", "--permutations", "2"]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("protocol online: german")
