"""The peers that read standardised features (``bench/peers_scaled.py``) give the same predictions
on every run: a figure of the quality section is reproducible only if its best peer is.

river's ``KNNClassifier`` searches with an unseeded approximate index (``SWINN``, past its first 500
examples) by default, and two passes over the stream below then differ on a few examples; the bench
gives it exact search, so they agree to the bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from bench.peers_scaled import SCALED_PEERS, river_model


def _stream(rows: int = 1200, d: int = 8) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(rows, d))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=rows) > 0.5, 1, -1)
    return sp.csr_matrix(X), y


@pytest.mark.parametrize("name", sorted(n for n in SCALED_PEERS if n.startswith("river-")))
def test_a_river_peer_repeats_its_predictions(name: str) -> None:
    X, y = _stream()
    first = SCALED_PEERS[name](name, X, y)
    second = SCALED_PEERS[name](name, X, y)
    assert first.predictions.keys() == second.predictions.keys() == {"sum", "cost"}
    for metric, predictions in first.predictions.items():
        np.testing.assert_array_equal(predictions, second.predictions[metric])


def test_the_knn_peer_searches_its_window_exactly() -> None:
    """Exact search over the classifier's default window (1000): the stronger set-up of the two."""
    from river import neighbors

    engine = river_model("river-knn")["KNNClassifier"].engine
    assert type(engine) is neighbors.LazySearch
    assert engine.window_size == 1000
