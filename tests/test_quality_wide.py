"""The study of the members above d = 64 starts from the service's own default model, bit for bit, and
its widest roster is the roster the defaults run at d <= 64."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from bench.quality.wide import ROSTERS, ensemble
from service.learners import EtaGrid
from service.learners.roster import STANDARD_MAX_FEATURES
from service.model_config import ModelConfig


def stream(d: int, n: int = 300) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0, size=d)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.8, 1, -1)
    return sp.csr_matrix(X), y


@pytest.mark.parametrize("metric", ["sum", "cost"])
def test_the_first_roster_is_the_default_model(metric: str) -> None:
    d = STANDARD_MAX_FEATURES + 6
    X, y = stream(d)
    ours = ensemble(ROSTERS[0], d, metric).run(X, y)
    service = ModelConfig(n_features=d, objective=metric).build_learner().run(X, y)
    np.testing.assert_array_equal(ours.scores, service.scores)


def test_the_widest_roster_is_the_roster_of_d_64() -> None:
    d = STANDARD_MAX_FEATURES
    built = ensemble(ROSTERS[-1], d, "sum")
    service = ModelConfig(n_features=d).build_learner()
    assert isinstance(service, EtaGrid)
    assert built.member_algorithms == service.member_algorithms
    assert built.member_forms == service.member_forms
    X, y = stream(d, 120)
    np.testing.assert_array_equal(built.run(X, y).scores, service.run(X, y).scores)
