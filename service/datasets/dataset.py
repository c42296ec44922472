"""The :class:`Dataset` every loader returns: a canonical CSR matrix, ±1 labels and optional row orders."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled data set ready for streaming.

    Attributes:
        name: registry name, or the file name for a path.
        X: ``n x d`` float64 CSR matrix, canonical (sorted indices, no duplicates, no stored zeros).
        y: int8 array of length ``n`` with values exactly +1 (anomaly / positive) or -1.
        permutations: ``k x n`` int64 array of 0-based row orders (german.mat's ``ID_ALL`` minus 1),
            or ``None`` when the source ships none.
        source: the file path(s) it was read from (``os.pathsep``-joined when several), or the
            ``sklearn:`` / ``river:`` identifier.
    """

    name: str
    X: sp.csr_matrix
    y: np.ndarray
    permutations: np.ndarray | None = None
    source: str = ""

    def __post_init__(self) -> None:
        n = self.X.shape[0]
        if self.y.shape != (n,):
            raise ValueError(f"{self.name}: y has shape {self.y.shape}, expected ({n},)")
        if self.permutations is not None and (self.permutations.ndim != 2 or self.permutations.shape[1] != n):
            raise ValueError(
                f"{self.name}: permutations have shape {self.permutations.shape}, expected (k, {n})"
            )

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of columns."""
        return int(self.X.shape[1])

    @property
    def n_positive(self) -> int:
        """Number of +1 (anomaly) labels."""
        return int(np.count_nonzero(self.y == 1))

    @property
    def n_negative(self) -> int:
        """Number of -1 labels."""
        return int(np.count_nonzero(self.y == -1))

    def summary(self) -> dict[str, str | int]:
        """What a ``--json`` document says of the data set it ran on."""
        return {
            "name": self.name,
            "rows": self.n_samples,
            "features": self.n_features,
            "positives": self.n_positive,
            "negatives": self.n_negative,
            "source": str(self.source),
        }
