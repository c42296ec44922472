"""service.datasets: the shared data sets load with the README's figures; readers behave."""

from __future__ import annotations

import bz2
import functools
import gzip
import lzma
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from service.datasets import (
    REGISTRY,
    Dataset,
    iter_rows,
    l2_normalize,
    load,
    map_labels,
    read_esl_zip,
    read_libsvm,
)
from tests.conftest import DATASETS, dataset_path


@functools.cache
def _load_shared(name: str) -> Dataset:
    for f in REGISTRY[name].files:
        dataset_path(f)  # fails when the shared data are absent
    return load(name, datasets_dir=DATASETS)


def _shared(name: str) -> Dataset:
    for f in REGISTRY[name].files:
        dataset_path(f)
    return _load_shared(name)


def _assert_canonical(ds: Dataset) -> None:
    X = ds.X
    assert isinstance(X, sp.csr_matrix)
    assert X.dtype == np.float64
    assert X.has_sorted_indices and X.has_canonical_format
    assert np.all(X.data != 0), "explicit zeros stored"
    assert ds.y.dtype in (np.int8, np.int64)
    assert set(np.unique(ds.y).tolist()) <= {-1, 1}


# ---------------------------------------------------------------------------------------------
# The registered data sets: figures from their sources (service/datasets/sources.py)


@pytest.mark.parametrize(
    ("name", "rows", "cols", "positives"),
    [
        ("a9a", 48842, 123, 11687),
        ("a9a-train", 32561, 123, 7841),
        ("german", 1000, 24, 300),
        ("ijcnn1", 49990, 22, 4853),
        ("mushrooms", 8124, 112, 3916),
        ("australian", 690, 14, 307),
        ("dna", 2000, 180, 464),
        ("usps", 7291, 256, 1194),
    ],
)
def test_shared_dataset_figures(name: str, rows: int, cols: int, positives: int) -> None:
    ds = _shared(name)
    _assert_canonical(ds)
    assert ds.X.shape == (rows, cols)
    assert ds.n_positive == positives
    assert ds.n_negative == rows - positives
    assert ds.name == name


def test_a9a_is_train_then_test() -> None:
    full, train = _shared("a9a"), _shared("a9a-train")
    assert full.n_negative == 37155
    assert (full.X[: train.n_samples] != train.X).nnz == 0
    np.testing.assert_array_equal(full.y[: train.n_samples], train.y)
    test_part = read_libsvm(dataset_path("a9a", "a9a.t.xz"), n_features=123)
    assert (test_part.n_samples, test_part.n_positive) == (16281, 3846)
    assert (full.X[train.n_samples :] != test_part.X).nnz == 0


def test_ijcnn1_full_is_both_files() -> None:
    dataset_path("ijcnn1", "ijcnn1.tst.bz2")
    ds = load("ijcnn1-full", datasets_dir=DATASETS)
    assert ds.X.shape == (141691, 22)
    assert ds.n_positive == 13565


def test_german_permutations() -> None:
    ds = _shared("german")
    perms = ds.permutations
    assert perms is not None
    assert perms.dtype == np.int64
    assert perms.shape == (20, 1000)
    for row in perms:
        np.testing.assert_array_equal(np.sort(row), np.arange(1000))
    raw = scipy.io.loadmat(dataset_path("german", "german.mat"))["ID_ALL"]
    np.testing.assert_array_equal(perms + 1, raw)


def test_german_mat_equals_libsvm_text() -> None:
    mat = _shared("german")
    text = read_libsvm(dataset_path("german", "german.numer.xz"), n_features=24)
    np.testing.assert_array_equal(mat.X.toarray(), text.X.toarray())
    np.testing.assert_array_equal(mat.y, text.y)
    raw = scipy.io.loadmat(dataset_path("german", "german.mat"))["data"]
    np.testing.assert_array_equal(mat.X.toarray(), raw[:, 1:].astype(float))
    np.testing.assert_array_equal(mat.y, raw[:, 0])


def test_usps_other_digit_and_dna_mapping() -> None:
    dataset_path("usps", "zip.train.gz")
    eight = load("usps", datasets_dir=DATASETS, positive_label=8)
    assert eight.n_positive == 542
    dna = _shared("dna")
    raw = read_libsvm(dataset_path("dna", "dna.scale.xz"), n_features=180, positive_label=1)
    np.testing.assert_array_equal(dna.y, raw.y)


def test_mushrooms_label_one_is_positive() -> None:
    ds = _shared("mushrooms")
    with pytest.raises(ValueError, match="positive_label"):
        read_libsvm(dataset_path("mushrooms", "mushrooms.xz"))
    assert ds.n_positive == 3916


def test_library_bundled_datasets() -> None:
    bc = load("sklearn:breast_cancer")
    _assert_canonical(bc)
    assert bc.X.shape == (569, 30)
    assert bc.n_positive == 212  # malignant
    ph = load("river:phishing")
    _assert_canonical(ph)
    assert ph.X.shape == (1250, 9)
    assert ph.n_positive == 548  # phishing, the minority class


def test_import_needs_only_numpy_scipy() -> None:
    code = (
        "import sys, service.datasets\n"
        "bad = [m for m in ('sklearn', 'river', 'vowpalwabbit') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])


# ---------------------------------------------------------------------------------------------
# Locating the data


def test_unknown_name_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="neither a known data set"):
        load("no-such-set", datasets_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "a9a" / "a9a.xz")):
        load("a9a", datasets_dir=tmp_path)


def test_datasets_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "australian").mkdir()
    with lzma.open(tmp_path / "australian" / "australian_scale.xz", "wt") as fh:
        fh.write("+1 1:0.5 14:-1\n-1 2:0.25\n")
    monkeypatch.setenv("ACOG_DATASETS_DIR", str(tmp_path))
    ds = load("australian")
    assert ds.X.shape == (2, 14)
    assert ds.y.tolist() == [1, -1]
    monkeypatch.setenv("ACOG_DATASETS_DIR", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="missing"):
        load("australian")


# ---------------------------------------------------------------------------------------------
# LIBSVM reader

SAMPLE = (
    "# a comment line\r\n"
    "+1 1:0.5 3:-2   \r\n"
    "\r\n"
    "-1 qid:7 2:1e-3 # trailing comment\r\n"
    "1.0 3:4 1:1\r\n"  # unsorted indices
    "-1.0 2:0\r\n"  # explicit zero is dropped
)
SAMPLE_DENSE = np.array([[0.5, 0, -2, 0], [0, 1e-3, 0, 0], [1, 0, 4, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize("compression", ["plain", "gz", "bz2", "xz"])
def test_compressed_and_plain_readers_agree(tmp_path: Path, compression: str) -> None:
    data = SAMPLE.encode()
    path = tmp_path / f"sample.{compression}"
    openers: dict[str, Callable[..., Any]] = {"plain": open, "gz": gzip.open, "bz2": bz2.open}
    openers["xz"] = lzma.open
    opener = openers[compression]
    with opener(path, "wb") as fh:
        fh.write(data)
    ds = load(path, n_features=4)
    _assert_canonical(ds)
    np.testing.assert_array_equal(ds.X.toarray(), SAMPLE_DENSE)
    assert ds.y.tolist() == [1, -1, 1, -1]
    assert ds.source == str(path)


def test_n_features_override(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("1 2:1\n-1 1:1\n")
    assert load(path).X.shape == (2, 2)
    assert load(path, n_features=5).X.shape == (2, 5)
    with pytest.raises(ValueError, match="exceeds n_features=1"):
        load(path, n_features=1)


def test_label_mapping() -> None:
    assert map_labels(np.array([1, -1, 1])).tolist() == [1, -1, 1]
    assert map_labels(np.array([0, 1, 1])).tolist() == [-1, 1, 1]
    assert map_labels(np.array([1, 2, 3]), positive_label=2).tolist() == [-1, 1, -1]
    assert map_labels(np.array([1, 2, 3]), positive_label=2).dtype == np.int8
    with pytest.raises(ValueError, match="positive_label"):
        map_labels(np.array([1, 2]))
    with pytest.raises(ValueError, match="does not occur"):
        map_labels(np.array([1, 2]), positive_label=5)


@pytest.mark.parametrize(
    "bad",
    [
        "1 3:abc",
        "x 1:2",
        "1 0:1",
        "1 3",
        "1 3:4:5",
        "1 5 1:2:3",  # a missing ':' hidden by an extra one elsewhere on the line
        "1 2:1 2:3",
        "1 1:nan",
        "inf 1:1",
        "1 2.5:1",
        "1 :4",
        "1 4:",
    ],
)
def test_malformed_line_names_the_line(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(f"# header\n+1 1:1\n{bad}\n-1 2:1\n")
    with pytest.raises(ValueError, match=r"line 3\b"):
        read_libsvm(path)


def test_esl_zip_and_mat_paths(tmp_path: Path) -> None:
    zpath = tmp_path / "zip.mini"
    zpath.write_text("0.0000 -1.0000 0.5000\n3.0000 0.0000 1.0000\n0.0000 0.2500 -0.2500\n")
    with pytest.raises(ValueError, match="positive_label"):
        load(zpath)
    ds = load(zpath, positive_label=0)
    assert ds.y.tolist() == [1, -1, 1]
    np.testing.assert_array_equal(ds.X.toarray(), [[-1, 0.5], [0, 1], [0.25, -0.25]])
    _assert_canonical(read_esl_zip(zpath, positive_label=3))

    mpath = tmp_path / "mini.mat"
    data = np.array([[1, 0, 2], [-1, 3, 0], [-1, 0, 0]], dtype=np.int16)
    scipy.io.savemat(mpath, {"data": data, "ID_ALL": np.array([[3, 1, 2], [1, 2, 3]], dtype=np.uint16)})
    mat = load(mpath)
    assert mat.y.tolist() == [1, -1, -1]
    np.testing.assert_array_equal(mat.X.toarray(), data[:, 1:])
    assert mat.permutations is not None
    assert mat.permutations.tolist() == [[2, 0, 1], [0, 1, 2]]
    scipy.io.savemat(mpath, {"data": data, "ID_ALL": np.array([[1, 1, 2]], dtype=np.uint16)})
    with pytest.raises(ValueError, match="not a permutation"):
        load(mpath)


# ---------------------------------------------------------------------------------------------
# l2_normalize and iter_rows

_entries = st.one_of(
    st.just(0.0),
    st.floats(min_value=1e-100, max_value=1e100),
    st.floats(min_value=-1e100, max_value=-1e-100),
)


@st.composite
def _sparse_matrices(draw: st.DrawFn) -> sp.csr_matrix:
    n = draw(st.integers(1, 6))
    d = draw(st.integers(1, 6))
    flat = draw(st.lists(_entries, min_size=n * d, max_size=n * d))
    return sp.csr_matrix(np.array(flat).reshape(n, d))


@settings(max_examples=200, deadline=None)
@given(_sparse_matrices())
def test_l2_normalize_properties(X: sp.csr_matrix) -> None:
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    out = l2_normalize(X)
    # input unchanged, output new
    np.testing.assert_array_equal(X.data, before[0])
    np.testing.assert_array_equal(X.indices, before[1])
    np.testing.assert_array_equal(X.indptr, before[2])
    assert out is not X and not np.shares_memory(out.data, X.data)
    assert out.has_canonical_format
    dense_in, dense_out = X.toarray(), out.toarray()
    for a, b in zip(dense_in, dense_out, strict=True):
        if not a.any():
            assert not b.any()
            continue
        assert np.linalg.norm(b) == pytest.approx(1.0, rel=1e-12)
        # same direction: same support and signs, and a single positive ratio
        np.testing.assert_array_equal(a != 0, b != 0)
        ratio = b[a != 0] / a[a != 0]
        assert np.all(ratio > 0)
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)


def test_l2_normalize_extreme_magnitudes() -> None:
    X = sp.csr_matrix(np.array([[5e-324, 0, 1e-323], [1e300, -1e300, 0], [0, 0, 0], [3.0, 4.0, 0]]))
    out = l2_normalize(X).toarray()
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), [1, 1, 0, 1], rtol=1e-12)
    np.testing.assert_allclose(out[3], [0.6, 0.8, 0])
    np.testing.assert_allclose(out[1], [2**-0.5, -(2**-0.5), 0])


def test_iter_rows_views_and_dtypes() -> None:
    X = sp.csr_matrix(np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, -1]]))
    X.indices = X.indices.astype(np.int64)
    X.indptr = X.indptr.astype(np.int64)
    rows = list(iter_rows(X))
    assert [r[0].tolist() for r in rows] == [[1], [], [0, 2]]
    assert [r[1].tolist() for r in rows] == [[1.5], [], [2.0, -1.0]]
    for idx, val in rows:
        assert idx.dtype == np.int64 and val.dtype == np.float64
        assert np.shares_memory(val, X.data) or val.size == 0
        assert not val.flags.writeable
    X32 = sp.csr_matrix(np.array([[0, 1.5, 0], [2, 0, -1]], dtype=np.float32))
    assert all(i.dtype == np.int64 and v.dtype == np.float64 for i, v in iter_rows(X32))
    with pytest.raises(TypeError):
        list(iter_rows(X.toarray()))
