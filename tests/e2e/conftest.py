"""Fixtures of the end-to-end suite: the german stream, and a private Redis per module."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from service.datasets import l2_normalize, load
from service.model_config import ModelConfig

from ..conftest import dataset_path
from ..support.private_redis import PrivateRedis
from .client import private_redis

N_FEATURES = 24


@dataclass(frozen=True)
class German:
    """german.mat in the order of its first permutation: raw rows for the API, unit rows for the library."""

    rows: list[list[float]]
    y: list[int]
    unit: sp.csr_matrix
    probe: list[list[float]]
    """20 rows the stream never saw: dataset rows with seeded multiplicative noise."""

    def unit_row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        start, end = self.unit.indptr[i], self.unit.indptr[i + 1]
        return self.unit.indices[start:end].astype(np.int64), self.unit.data[start:end]

    def served_row(self, config: ModelConfig, i: int) -> Any:
        """Row ``i`` as the service hands it to ``config``'s learner: L2-normalised when the
        service scales requests, else as sent (the default ensemble normalises for its members)."""
        if config.request_normalize == "l2":
            return self.unit_row(i)
        return np.asarray(self.rows[i], dtype=np.float64)


@pytest.fixture(scope="session")
def german() -> German:
    dataset_path("german", "german.mat")
    data = load("german")
    assert data.permutations is not None
    order = data.permutations[0]
    X = data.X[order]
    dense = X.toarray()
    rng = np.random.default_rng(20)
    probe = dense[rng.choice(len(dense), 20, replace=False)] * rng.uniform(0.5, 1.5, size=(20, N_FEATURES))
    return German(
        rows=dense.tolist(), y=[int(v) for v in data.y[order]], unit=l2_normalize(X), probe=probe.tolist()
    )


@pytest.fixture(scope="module")
def module_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateRedis]:
    """A redis-server of this module's own (append-only), so no test collides with another."""
    with private_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server
