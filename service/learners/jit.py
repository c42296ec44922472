"""The numba decorator every kernel uses, with a cache that cannot go stale.

Numba's on-disk cache is keyed on the file that defines a function, so editing a kernel
that another cached function calls would leave stale machine code behind. The cache
directory is therefore keyed on a hash of every source file of this package: any edit
starts a fresh cache. The base directory is ``$ACOG_JIT_CACHE_DIR``, else
``$NUMBA_CACHE_DIR``, else ``~/.cache/acog-service/numba``; when it is not writable the
system temporary directory is used. This module must be imported before any kernel is
decorated, which ``from .jit import kernel`` guarantees.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numba
from numba import njit

_PACKAGE = Path(__file__).resolve().parent


def _source_digest() -> str:
    digest = hashlib.sha256(numba.__version__.encode())
    for path in sorted(_PACKAGE.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_dir() -> Path:
    base = os.environ.get("ACOG_JIT_CACHE_DIR") or os.environ.get("NUMBA_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "acog-service" / "numba"
    target = root / _source_digest()
    try:
        target.mkdir(parents=True, exist_ok=True)
        probe = target / ".writable"
        probe.touch()
    except OSError:
        target = Path(tempfile.gettempdir()) / "acog-service-numba" / _source_digest()
        target.mkdir(parents=True, exist_ok=True)
    return target


numba.config.CACHE_DIR = str(_cache_dir())  # type: ignore[attr-defined]

kernel = njit(cache=True, error_model="numpy")
"""``@kernel``: compile with numba in nopython mode and cache the machine code.

``error_model="numpy"``: a division by zero gives inf or NaN, as IEEE arithmetic does, instead
of raising ``ZeroDivisionError`` from inside a kernel (and the checks it needs are gone). The
engine refuses inputs and scores that are not finite, so a degenerate update cannot pass
unnoticed."""
