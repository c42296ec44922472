"""Reader of header-less CSV tables whose **last** column is the label (the OLI2DS code's data sets)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .compression import read_text
from .dataset import Dataset
from .labels import map_labels


def read_label_last_csv(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = None,
    positive_label: float | None = None,
    name: str | None = None,
) -> Dataset:
    """Read ``x_1, ..., x_d, label`` rows (plain or compressed); every row must have the same width.

    Zeros become absent entries of the canonical CSR matrix, as in every other reader: the rows are
    complete tables, so ``X.toarray()`` gives them back exactly.
    """
    path = Path(path)
    try:
        table = np.loadtxt(read_text(path).splitlines(), delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if table.shape[1] < 2:
        raise ValueError(f"{path}: rows have {table.shape[1]} columns, expected features and a label")
    dense = table[:, :-1]
    if n_features is not None and n_features != dense.shape[1]:
        raise ValueError(f"{path}: has {dense.shape[1]} features, expected n_features={n_features}")
    X = sp.csr_matrix(dense)
    X.sort_indices()
    X.eliminate_zeros()
    return Dataset(name=name or path.name, X=X, y=map_labels(table[:, -1], positive_label), source=str(path))
