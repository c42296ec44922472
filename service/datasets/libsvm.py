"""The LIBSVM / SVMlight text reader (plain, ``.gz``, ``.bz2`` or ``.xz``).

One example a line, ``<label> [qid:<q>] <index>:<value> ...`` with 1-based indices. Labels may be
written ``+1``, ``-1``, ``1.0``, ``2``, ``3``...; trailing spaces, CRLF line ends, empty lines and
``#`` comments are tolerated. Malformed lines raise ``ValueError`` naming the file and 1-based line
number.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .compression import read_text
from .dataset import Dataset
from .labels import map_labels


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
    text = read_text(path)
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


def read_libsvm_raw(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    n_features: int | None = None,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(X, labels)``: one or more LIBSVM files, rows concatenated in the given order, with the labels
    as written (float64, e.g. the class numbers 1, 2, 3 of a multi-class file).

    Indices are 1-based in the file and 0-based in ``X``. ``n_features`` fixes the width (an
    index above it is an error); by default it is the largest index seen.
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
    return _canonical_csr(indptr, indices, values, (raw.size, width)), raw


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
    X, raw = read_libsvm_raw(files, n_features=n_features)
    y = map_labels(raw, positive_label)
    return Dataset(
        name=name or (files[0].name if files else ""),
        X=X,
        y=y,
        permutations=None,
        source=os.pathsep.join(str(f) for f in files),
    )
