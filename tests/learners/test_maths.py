"""Properties of the updates, stated as equations and checked with hypothesis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from research.reference import steps as reference
from service.learners import ALGORITHMS, create

from .streams import NAMES, params_for, sparse_stream

D = 6
finite_entries = st.floats(-3.0, 3.0, allow_nan=False, allow_subnormal=False)
vectors = arrays(np.float64, D, elements=finite_entries).filter(lambda v: np.linalg.norm(v) > 1e-3)


@settings(max_examples=60, deadline=None)
@given(
    xs=st.lists(vectors, min_size=1, max_size=12),
    ys=st.lists(st.sampled_from([-1, 1]), min_size=12, max_size=12),
    gamma=st.floats(0.1, 10.0),
    loss=st.sampled_from(["I", "II"]),
)
def test_acog_covariance_invariant(xs: list[np.ndarray], ys: list[int], gamma: float, loss: str) -> None:
    """On every updating round: inv(Sigma_new) = inv(Sigma_old) + x x^T / gamma."""
    learner = create("acog", n_features=D, eta=0.5, gamma=gamma, loss=loss, rho=2.0)
    for x, y in zip(xs, ys, strict=False):
        old = learner.to_state()["sigma"]
        info = learner.learn(x, y)
        new = learner.to_state()["sigma"]
        if info.updated:
            expected = np.linalg.inv(old) + np.outer(x, x) / gamma
            np.testing.assert_allclose(np.linalg.inv(new), expected, rtol=1e-8, atol=1e-8)
        else:
            assert np.array_equal(new, old)
        assert np.array_equal(new, new.T)  # exactly symmetric


@settings(max_examples=40, deadline=None)
@given(x=vectors, y=st.sampled_from([-1, 1]), gamma=st.floats(0.1, 10.0))
def test_acog_diag_keeps_the_diagonal_of_the_inverse(x: np.ndarray, y: int, gamma: float) -> None:
    """1 / s_new = 1 / s_old + x^2 / gamma on an updating round (the AdaGrad convention)."""
    learner = create("acog-diag", n_features=D, eta=1.0, gamma=gamma, rho=1.0)
    old = learner.to_state()["sigma_diag"]
    assert learner.learn(x, y).updated  # mu = 0: the loss is positive
    np.testing.assert_allclose(1 / learner.to_state()["sigma_diag"], 1 / old + x**2 / gamma, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(x=vectors, y=st.sampled_from([-1, 1]), rho=st.floats(0.1, 10.0), loss=st.sampled_from(["I", "II"]))
def test_losses_match_their_definitions(x: np.ndarray, y: int, rho: float, loss: str) -> None:
    learner = create("cog", n_features=D, eta=1.0, rho=rho, loss=loss)
    learner.learn(x, 1)  # move away from mu = 0
    s = learner.score(x)
    rho_y = rho if y == 1 else 1.0
    expected = max(0.0, rho_y - y * s) if loss == "I" else rho_y * max(0.0, 1.0 - y * s)
    assert learner.learn(x, y).loss == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", [n for n in NAMES if not ALGORITHMS[n].needs_presence])
@pytest.mark.parametrize("loss", ["I", "II"])
def test_fast_kernels_agree_with_the_readable_reference(name: str, loss: str) -> None:
    """Learners that read presence (OLI2DS) score with more than ``w . x`` and have a readable
    reference of their own (``oli2ds_reference``, against which ``test_oli2ds.py`` checks them)."""
    X, y = sparse_stream(400, 12, density=0.4, seed=21)
    params = params_for(name)
    if "loss" in params:
        params["loss"] = loss
    params.pop("remat_every", None)
    fast = create(name, n_features=12, **params).run(X, y).scores
    slow = reference.run(name, X.toarray(), y, **params)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("loss", ["I", "II"])
@pytest.mark.parametrize("remat_every", [10_000, 37])
def test_ssacog_equals_sacog_over_a_long_sparse_stream(loss: str, remat_every: int) -> None:
    """The factored sparse sketch is the dense sketch in exact arithmetic: 1e-8 over 6,000 rounds."""
    X, y = sparse_stream(6000, 400, density=0.02, seed=8)
    params = {"loss": loss, "eta": 0.5, "rho": "laplace", "sketch_size": 5}
    dense = create("sacog", n_features=400, **params)
    sparse = create("ssacog", n_features=400, remat_every=remat_every, **params)
    a, b = dense.run(X, y), sparse.run(X, y)
    assert np.max(np.abs(a.scores - b.scores)) <= 1e-8 * np.max(np.abs(a.scores))
    scale = np.abs(dense.weights()).max()
    np.testing.assert_allclose(sparse.weights(), dense.weights(), rtol=0, atol=1e-8 * scale)
    assert np.array_equal(a.predictions, b.predictions)


def test_rematerialisation_changes_no_prediction() -> None:
    X, y = sparse_stream(3000, 200, density=0.03, seed=9)
    rare = create("ssacog", n_features=200, remat_every=100_000).run(X, y)
    often = create("ssacog", n_features=200, remat_every=7).run(X, y)
    np.testing.assert_allclose(rare.scores, often.scores, rtol=1e-9, atol=1e-12)


def test_sketch_directions_stay_orthonormal() -> None:
    X, y = sparse_stream(2000, 50, density=0.1, seed=10)
    dense = create("sacog", n_features=50, sketch_size=4)
    dense.run(X, y)
    V = dense.to_state()["V"]
    np.testing.assert_allclose(V @ V.T, np.eye(4), atol=1e-12)
    sparse = create("ssacog", n_features=50, sketch_size=4, remat_every=10**6)
    sparse.run(X, y)
    s = sparse.to_state()
    Vs = s["F"] @ s["ZT"].T
    np.testing.assert_allclose(Vs @ Vs.T, np.eye(4), atol=1e-9)
    np.testing.assert_allclose(s["K"], s["ZT"].T @ s["ZT"], rtol=1e-9, atol=1e-9)  # K = Z Z^T


@pytest.mark.parametrize("name", [n for n in NAMES if not ALGORITHMS[n].needs_presence])
def test_reference_steps_are_pure_state_in_state_out(name: str) -> None:
    """The documented shape of an update: ``(state, x, y, params, rho) -> state'``, inputs untouched
    (OLI2DS's own reference, on ``{index: value}`` examples: ``test_oli2ds.py``)."""
    X, y = sparse_stream(30, 7, density=0.6, seed=4)
    params = params_for(name)
    model = reference.initial_model(name, 7, params)
    for x, label in zip(X.toarray(), y, strict=True):
        before = {k: np.copy(v) for k, v in model.items()}
        x_before = x.copy()
        after = reference.STEPS[name](model, x, int(label), params, 1.5)
        assert all(np.array_equal(model[k], before[k]) for k in before) and np.array_equal(x, x_before)
        assert after.keys() == model.keys()
        model = after
