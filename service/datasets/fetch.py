"""Finding the data set directory, and filling the download cache (``acog datasets fetch``).

The directory a registered name is read from is ``$ACOG_DATASETS_DIR`` when set (a local mirror,
laid out as :data:`~.sources.FILES` paths), else the download cache: ``$ACOG_DATASETS_CACHE``,
else ``$XDG_CACHE_HOME/acog-service/datasets``, else ``~/.cache/acog-service/datasets``.
:func:`fetch` downloads each missing file from its source (or from ``base_url``, a web server
laid out like a mirror), checks its sha256 before anything is written, and moves it into place,
so the cache never holds a partial or unverified file.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from .sources import FILES, DataFile

DATASETS_ENV = "ACOG_DATASETS_DIR"
"""Environment variable naming a local mirror of the data set files (read as is, never written)."""
CACHE_ENV = "ACOG_DATASETS_CACHE"
"""Environment variable naming the download cache (default ``~/.cache/acog-service/datasets``)."""
TIMEOUT_SECONDS = 15.0
"""How long one download may wait for the network before it is given up."""
HOW = f"set {DATASETS_ENV} to a directory holding the data set files, or run `acog datasets fetch`"
"""The one sentence that says how to get the data sets."""


def how(*names: str) -> str:
    """:data:`HOW`, naming the data sets to fetch."""
    return HOW[:-1] + "".join(f" {n}" for n in names) + "`"


class DatasetUnavailable(FileNotFoundError):
    """A data set file is absent, or cannot be downloaded or verified; the message says how to get it."""


def cache_dir() -> Path:
    """The download cache: ``$ACOG_DATASETS_CACHE``, else the user's cache directory."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "acog-service" / "datasets"


def default_datasets_dir() -> Path:
    """``$ACOG_DATASETS_DIR`` if set (it must be a directory), else :func:`cache_dir`."""
    env = os.environ.get(DATASETS_ENV)
    if env:
        path = Path(env)
        if not path.is_dir():
            raise DatasetUnavailable(f"${DATASETS_ENV} is {env!r}, which is not a directory")
        return path
    return cache_dir()


def missing_files(paths: Iterable[str], root: Path | None = None) -> list[str]:
    """Those of ``paths`` (relative) absent from ``root`` (default :func:`default_datasets_dir`)."""
    root = default_datasets_dir() if root is None else root
    return [p for p in paths if not (root / p).is_file()]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def normalise_text(data: bytes) -> bytes:
    """CRLF -> LF and runs of empty lines collapsed: the ``text-xz`` transform before compression."""
    return re.sub(rb"\n\n+", b"\n", data.replace(b"\r\n", b"\n"))


def german_numer(mat_file: Path) -> bytes:
    """``german.mat``'s ``data`` (label in column 1) as LIBSVM text: ``+1 1:2 2:48 ...``."""
    import numpy as np
    import scipy.io

    data = np.asarray(scipy.io.loadmat(mat_file)["data"], dtype=np.int64)
    lines = []
    for row in data:
        pairs = " ".join(f"{j}:{int(v)}" for j, v in enumerate(row[1:], start=1) if v != 0)
        lines.append(f"{int(row[0]):+d} {pairs}".rstrip())
    return ("\n".join(lines) + "\n").encode()


def download(url: str, timeout: float = TIMEOUT_SECONDS) -> bytes:
    """The bytes at ``url``; :class:`DatasetUnavailable` in one line when they cannot be had."""
    if not url.startswith(("http://", "https://", "file://")):
        raise DatasetUnavailable(f"cannot download {url!r}: not a URL")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data: bytes = response.read()
            return data
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise DatasetUnavailable(
            f"cannot download {url} ({reason}); without internet access, point {DATASETS_ENV} at a copy "
            "of the data set files, or fetch from a mirror with `acog datasets fetch --from URL`"
        ) from None


def obtain(file: DataFile, root: Path, base_url: str | None = None) -> bytes:
    """The verified bytes to store at ``root / file.path``: downloaded from its source (or from
    ``base_url + path``, a mirror's bytes, checked against ``sha256``), transformed, checked."""
    if base_url is not None:
        data = download(base_url.rstrip("/") + "/" + file.path)
        if sha256(data) != file.sha256:
            raise DatasetUnavailable(
                f"{file.path} from {base_url}: sha256 {sha256(data)}, expected {file.sha256}"
            )
        return data
    if file.transform == "german-numer":
        source = root / "german" / "german.mat"
        if not source.is_file():
            _store(root, FILES["german/german.mat"], obtain(FILES["german/german.mat"], root))
        content = german_numer(source)
    else:
        content = download(file.url)
        if file.transform == "text-xz":
            content = normalise_text(content)
    if sha256(content) != file.checked_sha256:
        raise DatasetUnavailable(
            f"{file.path} from {file.url}: sha256 {sha256(content)}, expected {file.checked_sha256}"
        )
    return content if file.transform == "none" else lzma.compress(content, preset=9 | lzma.PRESET_EXTREME)


def _store(root: Path, file: DataFile, data: bytes) -> Path:
    target = root / file.path
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".part-", delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, target)  # atomic: a reader never sees a partial file
    return target


def fetch(paths: Iterable[str], root: Path | None = None, base_url: str | None = None) -> list[Path]:
    """Download the files at ``paths`` missing from ``root`` (default :func:`cache_dir`); return
    those written. A file already present is left alone."""
    root = cache_dir() if root is None else root
    written = []
    for path in paths:
        if (root / path).is_file():
            continue
        written.append(_store(root, FILES[path], obtain(FILES[path], root, base_url)))
    return written


def verify(path: Path, file: DataFile) -> bool:
    """Whether the stored file at ``path`` holds ``file``'s content (compressed or as is)."""
    data = path.read_bytes()
    if sha256(data) == file.sha256:
        return True
    if file.content_sha256 is None:
        return False
    try:
        return sha256(lzma.LZMADecompressor().decompress(data)) == file.content_sha256
    except lzma.LZMAError:
        return False


__all__ = [
    "CACHE_ENV",
    "DATASETS_ENV",
    "HOW",
    "DatasetUnavailable",
    "cache_dir",
    "default_datasets_dir",
    "fetch",
    "how",
    "missing_files",
    "verify",
]
