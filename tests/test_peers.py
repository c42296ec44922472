"""bench.peers: every peer streams predict-then-learn, learns, honours rho, and is deterministic."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import river  # noqa: F401  the peers are dev dependencies (pip install -e '.[dev]'): absent, the suite fails
import scipy.sparse as sp
import sklearn  # noqa: F401
import vowpalwabbit  # noqa: F401

from bench.peers import PEERS, run_peer
from service.datasets import l2_normalize, load
from tests.conftest import DATASETS, dataset_path

ALL = sorted(PEERS)
WEIGHTED = sorted(n for n, p in PEERS.items() if p.supports_weights)
UNWEIGHTED = sorted(n for n, p in PEERS.items() if not p.supports_weights)


@functools.cache
def _german() -> tuple[sp.csr_matrix, np.ndarray]:
    ds = load("german", datasets_dir=DATASETS)
    assert ds.permutations is not None
    order = ds.permutations[0]
    return l2_normalize(ds.X)[order], ds.y[order]


def german_stream() -> tuple[sp.csr_matrix, np.ndarray]:
    """German credit, L2-normalised, in the authors' first permutation (skips without the data)."""
    dataset_path("german", "german.mat")
    return _german()


def synthetic(n: int, *, seed: int, imbalanced: bool = False) -> tuple[sp.csr_matrix, np.ndarray]:
    """Unit-norm Gaussian rows labelled by a random hyperplane.

    Balanced: separable through the origin with a margin of 0.1 (in cosine). Imbalanced: about 7%
    positives (cosine above 0.45) with 5% of labels flipped, so class weights matter.
    """
    rng = np.random.default_rng(seed)
    d = 20
    w = rng.normal(size=d)
    X = rng.normal(size=(3 * n, d))
    cos = X @ w / np.linalg.norm(X, axis=1) / np.linalg.norm(w)
    if imbalanced:
        X, cos = X[:n], cos[:n]
        y = np.where(cos > 0.45, 1, -1)
        flip = rng.random(n) < 0.05
        y[flip] = -y[flip]
    else:
        keep = np.abs(cos) > 0.1
        X, cos = X[keep][:n], cos[keep][:n]
        y = np.where(cos > 0, 1, -1)
    return l2_normalize(sp.csr_matrix(X)), y


@pytest.mark.parametrize("name", ALL)
def test_runs_on_a_real_stream(name: str) -> None:
    X, y = german_stream()
    res = run_peer(name, X, y)
    assert res.name == name
    assert res.predictions.shape == (X.shape[0],)
    assert set(np.unique(res.predictions).tolist()) <= {-1, 1}
    assert res.predictions[0] == 1  # untrained: margin 0, sign(0) = +1
    assert 0.0 < res.seconds < 30.0
    # better than always answering the majority class on the balanced measure
    sens = np.mean(res.predictions[y == 1] == 1)
    spec = np.mean(res.predictions[y == -1] == -1)
    assert (sens + spec) / 2 > 0.5


@pytest.mark.parametrize("name", ALL)
def test_learns_a_separable_stream(name: str) -> None:
    X, y = synthetic(1000, seed=3)
    res = run_peer(name, X, y)
    half = len(y) // 2
    accuracy = np.mean(res.predictions[half:] == y[half:])
    assert accuracy > 0.9, f"{name}: accuracy {accuracy:.3f} on the second half"


@pytest.mark.parametrize("name", WEIGHTED)
def test_rho_raises_the_share_of_positive_predictions(name: str) -> None:
    X, y = synthetic(1000, seed=5, imbalanced=True)
    plain = run_peer(name, X, y)
    weighted = run_peer(name, X, y, rho=10.0)
    assert not plain.weighted and weighted.weighted
    assert weighted.settings["rho"] == 10.0
    # Strict increases only: river-logreg's default SGD step (0.01) moves slowly, so its gain on
    # 1000 rows is small (0.1% -> 0.8% positive predictions); the others gain 15 to 35 points.
    assert np.mean(weighted.predictions == 1) > np.mean(plain.predictions == 1)
    pos = y == 1
    assert np.mean(weighted.predictions[pos] == 1) > np.mean(plain.predictions[pos] == 1)


@pytest.mark.parametrize("name", UNWEIGHTED)
def test_rho_is_ignored_with_a_warning_without_weights(name: str) -> None:
    X, y = synthetic(300, seed=5, imbalanced=True)
    plain = run_peer(name, X, y)
    with pytest.warns(UserWarning, match="rho"):
        res = run_peer(name, X, y, rho=10.0)
    assert not res.weighted and res.settings["rho_applied"] is False
    np.testing.assert_array_equal(res.predictions, plain.predictions)


@pytest.mark.parametrize("name", ALL)
def test_deterministic(name: str) -> None:
    X, y = synthetic(300, seed=11, imbalanced=True)
    rho = 4.0 if PEERS[name].supports_weights else 1.0
    a = run_peer(name, X, y, rho=rho)
    b = run_peer(name, X, y, rho=rho)
    np.testing.assert_array_equal(a.predictions, b.predictions)


@pytest.mark.parametrize("name", ["vw", "vw-ojanewton", "vw-q", "vw-nn"])
def test_vw_prediction_is_made_before_learning(name: str) -> None:
    """The prediction read after ``learn`` equals ``predict`` then ``learn`` on text examples, and
    ``--classweight 1:rho`` equals an importance weight ``rho`` written in the positive labels."""
    from vowpalwabbit import Workspace

    X, y = german_stream()
    X, y = X[:300], y[:300]
    rho = 3.0
    res = run_peer(name, X, y, rho=rho)
    base = res.settings["args"].split(" --classweight")[0]
    ws = Workspace(base)
    expected = []
    for row, label in zip(X, y, strict=True):
        feats = " ".join(f"{j}:{v!r}" for j, v in zip(row.indices.tolist(), row.data.tolist(), strict=True))
        line = f"1 {rho!r} | {feats}" if label == 1 else f"-1 | {feats}"
        expected.append(1 if ws.predict(line) >= 0 else -1)
        ws.learn(line)
    ws.finish()
    np.testing.assert_array_equal(res.predictions, expected)


def test_bad_arguments() -> None:
    X, y = synthetic(20, seed=1)
    with pytest.raises(KeyError, match="unknown peer"):
        run_peer("nope", X, y)
    with pytest.raises(ValueError, match="only"):
        run_peer("river-pa", X, (y > 0).astype(int))
    with pytest.raises(ValueError, match="shape"):
        run_peer("river-pa", X, y[:-1])
    with pytest.raises(ValueError, match="rho"):
        run_peer("vw", X, y, rho=0.0)
    with pytest.raises(ValueError, match="--link"):
        run_peer("vw", X, y, args="--link logistic")
