"""Readers of the two dense-table formats: MATLAB ``.mat`` (LIBOL / german layout) and ESL USPS text.

- **MATLAB** (``scipy.io.loadmat``): ``data`` is an ``n x (d+1)`` matrix whose first column is the
  label and whose other columns are the features; the optional ``ID_ALL`` is a ``k x n`` matrix of
  1-based row permutations, returned 0-based in ``Dataset.permutations``.
- **ESL USPS** (``zip.train[.gz]`` / ``zip.test[.gz]``): each line is the digit written as a
  float, then 256 grey values in [-1, 1].
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from .compression import read_text
from .dataset import Dataset
from .labels import map_labels


def _with_width(dense: np.ndarray, n_features: int | None, path: Path) -> np.ndarray:
    if n_features is None or n_features == dense.shape[1]:
        return dense
    if n_features < dense.shape[1]:
        raise ValueError(f"{path}: has {dense.shape[1]} features, more than n_features={n_features}")
    return np.pad(dense, ((0, 0), (0, n_features - dense.shape[1])))


def read_mat(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = None,
    positive_label: float | None = None,
    name: str | None = None,
) -> Dataset:
    """Read a MATLAB file in the LIBOL / german.mat layout.

    ``data`` (``n x (d+1)``): column 0 is the label, columns 1..d the raw features (not scaled).
    ``ID_ALL`` (optional, ``k x n``, 1-based): row permutations, returned 0-based as int64; each
    row must be a permutation of ``1..n``.
    """
    path = Path(path)
    mat = scipy.io.loadmat(path)
    if "data" not in mat:
        raise ValueError(
            f"{path}: no 'data' variable (keys: {sorted(k for k in mat if not k.startswith('_'))})"
        )
    data = np.asarray(mat["data"])
    if data.ndim != 2 or data.shape[1] < 2:
        raise ValueError(f"{path}: 'data' has shape {data.shape}, expected n x (1 + d)")
    n = data.shape[0]
    dense = _with_width(data[:, 1:].astype(np.float64), n_features, path)
    X = sp.csr_matrix(dense)
    X.sort_indices()
    X.eliminate_zeros()
    y = map_labels(data[:, 0], positive_label)
    perms: np.ndarray | None = None
    if "ID_ALL" in mat:
        ids = np.asarray(mat["ID_ALL"]).astype(np.int64)
        if ids.ndim != 2 or ids.shape[1] != n:
            raise ValueError(f"{path}: 'ID_ALL' has shape {ids.shape}, expected (k, {n})")
        perms = ids - 1
        expected = np.arange(n)
        for k, row in enumerate(perms):
            if not np.array_equal(np.sort(row), expected):
                raise ValueError(f"{path}: ID_ALL row {k + 1} is not a permutation of 1..{n}")
    return Dataset(name=name or path.name, X=X, y=y, permutations=perms, source=str(path))


def read_esl_zip(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = None,
    positive_label: float | None = None,
    name: str | None = None,
) -> Dataset:
    """Read the ESL USPS text format (``zip.train.gz``): the digit as a float, then 256 values.

    The digit is the raw label (0..9), so ``positive_label`` is needed unless the caller relabelled.
    """
    path = Path(path)
    text = read_text(path)
    try:
        table = np.loadtxt(text.splitlines(), dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if table.shape[1] < 2:
        raise ValueError(f"{path}: rows have {table.shape[1]} columns, expected a label and features")
    dense = _with_width(table[:, 1:], n_features, path)
    X = sp.csr_matrix(dense)
    X.sort_indices()
    X.eliminate_zeros()
    return Dataset(
        name=name or path.name,
        X=X,
        y=map_labels(table[:, 0], positive_label),
        permutations=None,
        source=str(path),
    )
