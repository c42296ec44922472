"""The registered shared data sets, the library-bundled ones, and :func:`load`, which reads any of them.

A name in :data:`REGISTRY` resolves to files under the data set directory (``$ACOG_DATASETS_DIR``,
a local mirror, else the download cache ``acog datasets fetch`` fills: see :mod:`.fetch`) with the
label mapping the paper uses; each file's source URL, size, sha256 and licence are in
:data:`.sources.FILES`. ``sklearn:`` and ``river:`` sources are imported lazily; anything else is
read as a path by its suffix or name.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .csv_table import read_label_last_csv
from .dataset import Dataset
from .dense import read_esl_zip, read_mat
from .fetch import DatasetUnavailable, default_datasets_dir, how
from .labels import map_labels
from .libsvm import read_libsvm


@dataclass(frozen=True)
class DatasetSpec:
    """How to load one registered data set: files under the data set directory (each described in
    :data:`.sources.FILES`) and the label mapping."""

    files: tuple[str, ...]
    reader: Callable[..., Dataset]
    n_features: int | None
    positive_label: float | None
    description: str


REGISTRY: dict[str, DatasetSpec] = {
    "a9a": DatasetSpec(
        files=("a9a/a9a.xz", "a9a/a9a.t.xz"),
        reader=read_libsvm,
        n_features=123,
        positive_label=None,
        description="Adult: a9a then a9a.t, 48842 x 123, +1 = income >50K (11687 : 37155), as the paper",
    ),
    "a9a-train": DatasetSpec(
        files=("a9a/a9a.xz",),
        reader=read_libsvm,
        n_features=123,
        positive_label=None,
        description="a9a training split only, 32561 x 123 (7841 : 24720)",
    ),
    "german": DatasetSpec(
        files=("german/german.mat",),
        reader=read_mat,
        n_features=None,
        positive_label=None,
        description="german.numer from german.mat, 1000 x 24 raw features, +1 = bad credit (300 : 700), "
        "with the 20 ID_ALL permutations",
    ),
    "ijcnn1": DatasetSpec(
        files=("ijcnn1/ijcnn1.trn.bz2",),
        reader=read_libsvm,
        n_features=22,
        positive_label=None,
        description="ijcnn1 tr+val file only, 49990 x 22, 4853 positives, as the TKDE tables",
    ),
    "ijcnn1-full": DatasetSpec(
        files=("ijcnn1/ijcnn1.trn.bz2", "ijcnn1/ijcnn1.tst.bz2"),
        reader=read_libsvm,
        n_features=22,
        positive_label=None,
        description="ijcnn1 train then test, 141691 x 22, 13565 positives, as the ICDM 2015 tables",
    ),
    "mushrooms": DatasetSpec(
        files=("mushrooms/mushrooms.xz",),
        reader=read_libsvm,
        n_features=112,
        positive_label=1,
        description="mushrooms, 8124 x 112; label 1 (poisonous) -> +1, label 2 -> -1 (3916 : 4208)",
    ),
    "australian": DatasetSpec(
        files=("australian/australian_scale.xz",),
        reader=read_libsvm,
        n_features=14,
        positive_label=None,
        description="australian_scale, 690 x 14 in [-1, 1], 307 : 383",
    ),
    "dna": DatasetSpec(
        files=("dna/dna.scale.xz",),
        reader=read_libsvm,
        n_features=180,
        positive_label=1,
        description="dna.scale training file, 2000 x 180; class 1 -> +1, classes 2, 3 -> -1 (464 : 1536)",
    ),
    "usps": DatasetSpec(
        files=("usps/zip.train.gz",),
        reader=read_esl_zip,
        n_features=256,
        positive_label=0,
        description="USPS (ESL zip.train), 7291 x 256; digit 0 -> +1, digits 1..9 -> -1 (1194 : 6097)",
    ),
    # The OLI2DS reference code's data sets (label in the last column, +1 as the code reads it).
    "wdbc": DatasetSpec(
        files=("oli2ds/wdbc.csv.xz",),
        reader=read_label_last_csv,
        n_features=30,
        positive_label=None,
        description="WDBC as the OLI2DS code ships it, 569 x 30, +1 = malignant (212 : 357)",
    ),
    "credit-a": DatasetSpec(
        files=("oli2ds/credit-a.csv.xz",),
        reader=read_label_last_csv,
        n_features=15,
        positive_label=None,
        description="UCI credit approval as the OLI2DS code ships it, 653 x 15 (296 : 357)",
    ),
    "splice": DatasetSpec(
        files=("oli2ds/splice.csv.xz",),
        reader=read_label_last_csv,
        n_features=60,
        positive_label=None,
        description="UCI splice junction as the OLI2DS code ships it, 3175 x 60, bases 0-3 (1648 : 1527)",
    ),
}
"""The registered data sets by name (files relative to the data set directory)."""

LAZY_SOURCES = ("sklearn:breast_cancer", "river:phishing")
"""Data sets bundled in optional libraries, imported only when asked for."""


def files_of(names: list[str] | tuple[str, ...] | None = None) -> list[str]:
    """The data set files (relative paths) the registered ``names`` read, all of them for ``None``;
    ``KeyError`` naming an unknown one."""
    chosen = list(REGISTRY) if names is None else list(names)
    unknown = [n for n in chosen if n not in REGISTRY]
    if unknown:
        raise KeyError(f"unknown data set(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    return list(dict.fromkeys(f for n in chosen for f in REGISTRY[n].files))


def _load_breast_cancer(positive_label: float | None) -> Dataset:
    from sklearn.datasets import load_breast_cancer  # bench-only dependency, imported lazily

    bunch = load_breast_cancer()
    target = np.asarray(bunch.target)
    # sklearn encodes malignant as 0 and benign as 1 (target_names == ['malignant', 'benign']).
    if list(bunch.target_names) != ["malignant", "benign"]:
        raise RuntimeError(f"unexpected breast_cancer target_names {list(bunch.target_names)}")
    y = map_labels(target, 0 if positive_label is None else positive_label)
    X = sp.csr_matrix(np.asarray(bunch.data, dtype=np.float64))
    X.sort_indices()
    X.eliminate_zeros()
    return Dataset("sklearn:breast_cancer", X, y, None, "sklearn:breast_cancer")


def _load_phishing(positive_label: float | None) -> Dataset:
    from river.datasets import Phishing  # bench-only dependency, imported lazily

    rows = list(Phishing())
    names = list(rows[0][0])  # river's column order
    dense = np.array([[float(x[k]) for k in names] for x, _ in rows], dtype=np.float64)
    raw = np.array([float(bool(t)) for _, t in rows])  # True (phishing) -> 1.0
    y = map_labels(raw, 1 if positive_label is None else positive_label)
    X = sp.csr_matrix(dense)
    X.sort_indices()
    X.eliminate_zeros()
    return Dataset("river:phishing", X, y, None, "river:phishing")


def _read_path(
    path: Path, n_features: int | None, positive_label: float | None, name: str | None = None
) -> Dataset:
    if path.suffix == ".mat":
        return read_mat(path, n_features=n_features, positive_label=positive_label, name=name)
    if path.name.startswith("zip."):
        return read_esl_zip(path, n_features=n_features, positive_label=positive_label, name=name)
    return read_libsvm(path, n_features=n_features, positive_label=positive_label, name=name)


def load(
    name_or_path: str | os.PathLike[str],
    *,
    datasets_dir: str | os.PathLike[str] | None = None,
    n_features: int | None = None,
    positive_label: float | None = None,
) -> Dataset:
    """Load a registered data set, a library-bundled one, or a file.

    ``name_or_path`` is one of :data:`REGISTRY`'s names (files looked up under ``datasets_dir``,
    default :func:`default_datasets_dir`), ``sklearn:breast_cancer`` (569 x 30, malignant = +1),
    ``river:phishing`` (1250 x 9, phishing = +1, the minority class), or a path: ``*.mat`` (german
    layout), ``zip.*`` (ESL USPS text) or anything else as LIBSVM text. ``n_features`` overrides the
    width; ``positive_label`` overrides the registered mapping (e.g. ``load("usps", positive_label=8)``).
    """
    key = os.fspath(name_or_path)
    if key == "sklearn:breast_cancer":
        return _load_breast_cancer(positive_label)
    if key == "river:phishing":
        return _load_phishing(positive_label)
    spec = REGISTRY.get(key)
    if spec is not None:
        root = Path(datasets_dir) if datasets_dir is not None else default_datasets_dir()
        files = [root / f for f in spec.files]
        absent = [os.fspath(f) for f in files if not f.exists()]
        if absent:
            raise DatasetUnavailable(f"data set {key!r}: {', '.join(absent)} absent; {how(key)}")
        width = n_features if n_features is not None else spec.n_features
        label = positive_label if positive_label is not None else spec.positive_label
        shown = key if positive_label is None else f"{key}[positive={positive_label:g}]"
        if spec.reader is read_libsvm:
            return read_libsvm(files, n_features=width, positive_label=label, name=shown)
        return spec.reader(files[0], n_features=width, positive_label=label, name=shown)
    path = Path(key)
    if not path.is_file():
        known = ", ".join([*REGISTRY, *LAZY_SOURCES])
        raise FileNotFoundError(f"{key!r} is neither a known data set ({known}) nor an existing file")
    return _read_path(path, n_features, positive_label)
