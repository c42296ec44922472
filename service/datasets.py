"""Loading the benchmark data sets as canonical CSR matrices with labels in {+1, -1}.

Every loader returns a :class:`Dataset` whose ``X`` is a float64 ``scipy.sparse.csr_matrix`` in
canonical form (sorted column indices, no duplicates, no stored zeros) and whose ``y`` is an int8
array of exactly +1 / -1, **+1 being the anomaly (positive, usually minority) class**.

Formats read
------------
- **LIBSVM / SVMlight text** (plain, ``.gz``, ``.bz2`` or ``.xz``; compression is detected from
  the file's magic bytes): one example a line, ``<label> [qid:<q>] <index>:<value> ...`` with
  1-based indices. Labels may be written ``+1``, ``-1``, ``1.0``, ``2``, ``3``...; trailing
  spaces, CRLF line ends, empty lines and ``#`` comments are tolerated. Test splits can lack the
  highest feature index, so ``n_features=`` fixes the width. Malformed lines raise
  ``ValueError`` naming the file and 1-based line number.
- **MATLAB ``.mat`` in the LIBOL / german layout** (``scipy.io.loadmat``): ``data`` is an
  ``n x (d+1)`` matrix whose first column is the label and whose other columns are the features;
  the optional ``ID_ALL`` is a ``k x n`` matrix of 1-based row permutations, returned 0-based in
  ``Dataset.permutations``.
- **ESL USPS text** (``zip.train[.gz]`` / ``zip.test[.gz]``, recognised by the file name
  ``zip.*``): each line is the digit written as a float, then 256 grey values in [-1, 1].

Label mapping
-------------
Registered names carry their mapping (see :data:`REGISTRY` and the table in
``shared/datasets/README.md``):

=============  ==========================================  ===============================
name           positive (+1)                               negative (-1)
=============  ==========================================  ===============================
a9a, ...       label +1 (a9a, ijcnn1, german, australian)  label -1
mushrooms      label 1 (poisonous)                         label 2
dna            class 1 (EI)                                classes 2 and 3
usps           digit 0                                     digits 1..9
sklearn:       malignant (sklearn target 0)                benign (target 1)
breast_cancer
river:         phishing (river's ``True``, 548 of 1250)    legitimate (``False``, 702)
phishing
=============  ==========================================  ===============================

For any other file, or a registered name loaded with an explicit ``positive_label=``, the raw
labels are mapped by :func:`map_labels`: with ``positive_label`` given, that value is +1 and all
others -1; otherwise labels in {-1, +1} are kept, labels in {0, 1} map 1 -> +1 and 0 -> -1, and
anything else is an error.

Only numpy, scipy and the standard library are imported at module level; scikit-learn and
river are imported lazily, inside the ``sklearn:`` and ``river:`` loaders.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from .normalization import unit_l2_rows

__all__ = [
    "REGISTRY",
    "Dataset",
    "DatasetSpec",
    "default_datasets_dir",
    "iter_rows",
    "l2_normalize",
    "load",
    "map_labels",
    "read_esl_zip",
    "read_libsvm",
    "read_mat",
]

DATASETS_ENV = "ACOG_DATASETS_DIR"
"""Environment variable naming the directory that holds the shared data sets."""


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


# ----------------------------------------------------------------------------------------------
# Labels


def map_labels(raw: np.ndarray, positive_label: float | None = None) -> np.ndarray:
    """Map raw labels to an int8 array of +1 / -1.

    With ``positive_label`` given, entries equal to it become +1 and all others -1 (it is an
    error if no entry equals it). Without it, labels already in {-1, +1} are kept, labels in
    {0, 1} map 1 -> +1 and 0 -> -1, and any other set of labels raises ``ValueError``.
    """
    values = np.asarray(raw, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {values.shape}")
    if positive_label is not None:
        positive = values == float(positive_label)
        if values.size and not positive.any():
            found = ", ".join(f"{v:g}" for v in np.unique(values)[:20])
            raise ValueError(f"positive_label={positive_label!r} does not occur; labels found: {found}")
        return np.where(positive, 1, -1).astype(np.int8)
    distinct = set(np.unique(values).tolist())
    if distinct <= {-1.0, 1.0}:
        return values.astype(np.int8)
    if distinct <= {0.0, 1.0}:
        return np.where(values == 1.0, 1, -1).astype(np.int8)
    found = ", ".join(f"{v:g}" for v in sorted(distinct)[:20])
    raise ValueError(
        f"labels {{{found}}} are neither ±1 nor 0/1; pass positive_label= to say which is the anomaly (+1)"
    )


# ----------------------------------------------------------------------------------------------
# File readers


def _read_bytes(path: Path) -> bytes:
    """The file's content, decompressed when it starts with a gzip, bzip2 or xz magic number."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head.startswith(b"\x1f\x8b"):
        with gzip.open(path, "rb") as fh:
            return fh.read()
    if head.startswith(b"BZh"):
        with bz2.open(path, "rb") as fh:
            return fh.read()
    if head.startswith(b"\xfd7zXZ\x00"):
        with lzma.open(path, "rb") as fh:
            return fh.read()
    return path.read_bytes()


def _read_text(path: Path) -> str:
    raw = _read_bytes(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a text file ({exc})") from None


def _canonical_csr(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, shape: tuple[int, int]
) -> sp.csr_matrix:
    X = sp.csr_matrix(
        (data.astype(np.float64, copy=False), indices.astype(np.int64, copy=False), indptr),
        shape=shape,
    )
    X.sort_indices()
    X.eliminate_zeros()
    return X


def _bad_line(path: Path, lineno: int, line: str, why: str) -> ValueError:
    shown = line if len(line) <= 80 else line[:77] + "..."
    return ValueError(f"{path}: line {lineno}: {why}: {shown!r}")


_MAX_INDEX = 2**31 - 1
"""Largest feature index accepted (keeps ``X`` addressable with int32 indices, as scipy prefers)."""


def _check_libsvm_line(path: Path, lineno: int, line: str) -> None:
    """Slow, precise validation of one line; raises the ValueError naming the line."""
    parts = line.split()
    try:
        label = float(parts[0])
    except ValueError:
        raise _bad_line(path, lineno, line, f"label {parts[0]!r} is not a number") from None
    if not math.isfinite(label):
        raise _bad_line(path, lineno, line, f"label {parts[0]!r} is not finite")
    feats = parts[1:]
    if feats and feats[0].startswith("qid:"):
        feats = feats[1:]
    for tok in feats:
        idx, colon, val = tok.partition(":")
        if not colon or ":" in val:
            raise _bad_line(path, lineno, line, f"feature {tok!r} is not index:value")
        try:
            i = int(idx)
        except ValueError:
            raise _bad_line(path, lineno, line, f"index {idx!r} is not an integer") from None
        if i < 1:
            raise _bad_line(path, lineno, line, f"index {i} < 1 (LIBSVM indices are 1-based)")
        if i > _MAX_INDEX:
            raise _bad_line(path, lineno, line, f"index {i} is too large")
        try:
            value = float(val)
        except ValueError:
            raise _bad_line(path, lineno, line, f"value {val!r} is not a number") from None
        if not math.isfinite(value):
            raise _bad_line(path, lineno, line, f"value {val!r} is not finite")


def _read_libsvm_raw(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Parse a LIBSVM file into ``(raw_labels, indptr, indices0, values, max_index)``.

    The fast path does one Python ``split`` per line and converts all tokens with numpy at once;
    when anything fails, the lines are re-checked one by one so the error names the culprit.
    """
    text = _read_text(path)
    lines = text.split("\n")
    has_comments = "#" in text
    labels: list[str] = []
    linenos: list[int] = []
    counts: list[int] = []
    tokens: list[str] = []
    for lineno, line in enumerate(lines, start=1):
        if has_comments and "#" in line:
            line = line.partition("#")[0]
        parts = line.split()
        if not parts:
            continue
        labels.append(parts[0])
        linenos.append(lineno)
        feats = parts[1:]
        if feats and feats[0].startswith("qid:"):
            feats = feats[1:]
        counts.append(len(feats))
        tokens.extend(feats)

    def locate_error(why: str) -> ValueError:
        for lineno in linenos:
            line = lines[lineno - 1]
            if has_comments:
                line = line.partition("#")[0]
            _check_libsvm_line(path, lineno, line)
        return ValueError(f"{path}: {why}")  # not reached unless the slow check disagrees

    try:
        raw_labels = np.array(labels, dtype=np.float64)
    except ValueError:
        raise locate_error("bad label") from None
    n_tokens = len(tokens)
    joined = " ".join(tokens)
    # Each token must hold exactly one ':'; the cheap global count is exact only when no token
    # lacks one, so check per token when the total disagrees or a pair comes out wrong.
    pieces = joined.replace(":", " ").split(" ") if n_tokens else []
    if len(pieces) != 2 * n_tokens or any(tok.count(":") != 1 for tok in tokens):
        raise locate_error("malformed feature")
    try:
        idx = np.array(pieces[0::2], dtype=np.int64)
        vals = np.array(pieces[1::2], dtype=np.float64)
    except (ValueError, OverflowError):
        raise locate_error("malformed feature") from None
    if n_tokens and (idx.min() < 1 or idx.max() > _MAX_INDEX):
        raise locate_error("index out of range")
    if not (np.isfinite(raw_labels).all() and np.isfinite(vals).all()):
        raise locate_error("non-finite number")
    indptr = np.zeros(len(labels) + 1, dtype=np.int64)
    np.cumsum(np.asarray(counts, dtype=np.int64), out=indptr[1:])
    # Repeated indices within a row are ambiguous (sum? last wins?): reject them.
    if n_tokens:
        rows = np.repeat(np.arange(len(labels), dtype=np.int64), counts)
        order = np.lexsort((idx, rows))
        dup = (np.diff(rows[order]) == 0) & (np.diff(idx[order]) == 0)
        if dup.any():
            r = int(rows[order][1:][dup][0])
            lineno = linenos[r]
            raise _bad_line(path, lineno, lines[lineno - 1], "repeated feature index")
    max_index = int(idx.max()) if n_tokens else 0
    return raw_labels, indptr, idx - 1, vals, max_index


def read_libsvm(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    n_features: int | None = None,
    positive_label: float | None = None,
    name: str | None = None,
) -> Dataset:
    """Read one or more LIBSVM text files (plain/gz/bz2/xz), rows concatenated in the given order.

    Indices are 1-based in the file and 0-based in ``X``. ``n_features`` fixes the width (an
    index above it is an error); by default it is the largest index seen. Labels are mapped by
    :func:`map_labels` with ``positive_label``.
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files = [Path(p) for p in paths]
    if not files:
        raise ValueError("no files given")
    parts = [(f, *_read_libsvm_raw(f)) for f in files]
    width = max(p[5] for p in parts)
    if n_features is not None:
        if width > n_features:
            bad = next(p[0] for p in parts if p[5] > n_features)
            raise ValueError(f"{bad}: feature index {width} exceeds n_features={n_features}")
        width = n_features
    offsets = np.cumsum([0] + [int(p[2][-1]) for p in parts])
    indptr = np.concatenate(
        [parts[0][2][:1]] + [p[2][1:] + off for p, off in zip(parts, offsets, strict=False)]
    )
    indices = np.concatenate([p[3] for p in parts])
    values = np.concatenate([p[4] for p in parts])
    raw = np.concatenate([p[1] for p in parts])
    X = _canonical_csr(indptr, indices, values, (raw.size, width))
    y = map_labels(raw, positive_label)
    return Dataset(
        name=name or files[0].name,
        X=X,
        y=y,
        permutations=None,
        source=os.pathsep.join(str(f) for f in files),
    )


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
    text = _read_text(path)
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


# ----------------------------------------------------------------------------------------------
# Registry


@dataclass(frozen=True)
class DatasetSpec:
    """How to load one shared data set: files under the data set directory and the label mapping."""

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
}
"""The shared data sets by name (files relative to the data set directory)."""

LAZY_SOURCES = ("sklearn:breast_cancer", "river:phishing")
"""Data sets bundled in optional libraries, imported only when asked for."""


def default_datasets_dir() -> Path:
    """``$ACOG_DATASETS_DIR``, else ``<repo>/../shared/datasets``; FileNotFoundError if absent."""
    env = os.environ.get(DATASETS_ENV)
    if env:
        path = Path(env)
        if not path.is_dir():
            raise FileNotFoundError(f"${DATASETS_ENV} is {env!r}, which is not a directory")
        return path
    path = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
    if not path.is_dir():
        raise FileNotFoundError(
            f"shared data sets not found at {path}; set ${DATASETS_ENV} or pass datasets_dir="
        )
    return path


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
        for f in files:
            if not f.exists():
                raise FileNotFoundError(f"data set {key!r}: expected file {f} is missing")
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


# ----------------------------------------------------------------------------------------------
# Streaming helpers


def l2_normalize(X: sp.spmatrix | sp.sparray | np.ndarray) -> sp.csr_matrix:
    """Scale every row to unit L2 norm; all-zero rows stay zero. Returns a new canonical CSR matrix.

    The input is never modified. The kernel is :func:`service.normalization.unit_l2_rows`, the
    one the service applies to requests, so these rows and the same rows sent through the API
    are bit-identical. Each row is divided by its largest absolute value before its norm is
    taken, so tiny (subnormal) and huge rows normalise without underflow or overflow.
    """
    out = sp.csr_matrix(X, dtype=np.float64, copy=True)
    out.sum_duplicates()
    out.eliminate_zeros()
    out.data = unit_l2_rows(out.indptr.astype(np.int64), out.data)
    return out


def iter_rows(X: sp.spmatrix | sp.sparray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(indices, values)`` for each row of a CSR matrix, in order, without copying ``X``.

    ``indices`` is int64 and ``values`` float64; when ``X`` already stores those dtypes they are
    read-only views into ``X``.
    """
    if not sp.issparse(X) or X.format != "csr":
        raise TypeError(f"iter_rows needs a CSR matrix, got {type(X).__name__}")
    indptr = X.indptr
    indices = X.indices
    data = X.data
    same = indices.dtype == np.int64 and data.dtype == np.float64
    if same:
        indices = indices.view()
        data = data.view()
        indices.flags.writeable = False
        data.flags.writeable = False
    for i in range(X.shape[0]):
        s, e = int(indptr[i]), int(indptr[i + 1])
        if same:
            yield indices[s:e], data[s:e]
        else:
            yield indices[s:e].astype(np.int64), data[s:e].astype(np.float64)
