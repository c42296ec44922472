"""``warm_up`` compiles exactly what a set of learners needs: afterwards nothing compiles."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from service import jit_cache
from service.learners import InvalidParameter, create, warm_up
from service.model_config import ModelConfig


def specialisations() -> dict[int, set[object]]:
    return {id(k): set(k.signatures) for k in jit_cache.kernels()}


def test_after_warm_up_a_model_of_those_algorithms_compiles_nothing_on_any_path() -> None:
    # eta="auto", loss="auto": an ensemble, at d = 4 with quadratic, forest and kNN members too
    config = ModelConfig(n_features=4, algorithm="ssacog")
    done = warm_up([config, "acog-diag", create("cog", 2, eta="auto")])
    assert done.algorithms == ("acog-diag", "amf", "cog", "knn", "quadratic", "ssacog")
    assert done.seconds >= 0.0
    before = specialisations()
    for learner in (
        config.build_learner(),
        create("acog-diag", n_features=4, eta=0.5, rho="laplace"),
        create("cog", n_features=4, eta="auto", loss="auto", fit_intercept=True),
    ):
        x = np.array([0.5, 0.0, 0.5, 0.0])
        learner.predict(x)
        learner.learn(x, 1)
        learner.learn((np.array([3, 1]), np.array([1.0, -2.0])), -1)
        learner.learn(sp.csr_matrix(x), -1)
        frozen = np.frombuffer(np.array([0.25, -1.0]).tobytes())  # as the label log decodes them
        learner.learn((np.frombuffer(np.array([0, 2]).tobytes(), dtype=np.int64), frozen), 1)
        learner.learn((np.array([1, 3]), frozen), -1)
        learner.learn(np.frombuffer(x.tobytes()), 1)
        learner.run(sp.random(20, 4, density=0.5, format="csr", random_state=1), np.resize([1, -1, -1], 20))
        # weights: the leader's (empty while a member without a weight vector, the forest or kNN, leads)
        assert np.isfinite(learner.rho) and learner.weights().shape[0] in (0, 4, 5)
    assert specialisations() == before
    again = warm_up(["ssacog"])
    assert again.compiled == () and again.loaded == ()


def test_unknown_algorithm_is_refused_by_name() -> None:
    with pytest.raises(InvalidParameter) as info:
        warm_up(["acog-iii"])
    assert info.value.parameter == "algorithm"
