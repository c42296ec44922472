"""The numba decorator every kernel of the service uses, and the cache the *process* chooses.

Importing a module that defines kernels does no I/O and changes no global setting: ``@kernel``
only decides, when it decorates a function, whether numba may cache the machine code on
disk, and where. That is the choice of the process entry point (``acog`` in
:mod:`service.cli`, ``docker/warmup.py``, ``tests/conftest.py``, ``bench/__init__.py``),
which calls :func:`configure` *before* it imports :mod:`service.learners`:

>>> from service import jit_cache
>>> jit_cache.configure()  # doctest: +SKIP
PosixPath('/home/me/.cache/acog-service/numba/3f1c...')

Without :func:`configure`, kernels compile in memory on their first call and nothing is
written anywhere. :func:`configure` after a kernel has been decorated raises, because numba
fixes a function's cache locator when its ``@njit(cache=True)`` decorator runs.

**The cache cannot go stale.** Numba keys a cached function on its own source file, so
editing a kernel that a cached function in *another* file calls (numba inlines callees)
would leave stale machine code behind. :func:`configure` therefore appends a digest of every
kernel source file (:data:`KERNEL_SOURCES`, with the numba version) to the base directory:
any edit starts a fresh cache. ``@kernel`` refuses a function from a file outside those
sources, so that no kernel escapes the digest; :func:`outside_kernel` is for a kernel of another
package that calls only those and its own file's.

**Only our kernels are redirected.** Numba reads ``numba.config.CACHE_DIR`` when a decorator
runs; ``@kernel`` sets it to the configured directory for the duration of that one decoration
and restores it, so every other numba user in the process keeps its own cache. The base
directory is the argument of :func:`configure`, else ``$ACOG_JIT_CACHE_DIR``, else
``$NUMBA_CACHE_DIR``, else ``~/.cache/acog-service/numba``; when it is not writable the system
temporary directory is used.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numba
from numba import njit

_SERVICE = Path(__file__).parent  # the path the import system gave: no file-system call here

KERNEL_SOURCES: tuple[Path, ...] = (_SERVICE / "learners", _SERVICE / "normalization.py", Path(__file__))
"""Every file or package that defines kernels; their content keys the cache directory."""

OPTIONS: dict[str, Any] = {"error_model": "numpy"}
"""``error_model="numpy"``: a division by zero gives inf or NaN, as IEEE arithmetic does,
instead of raising ``ZeroDivisionError`` from inside a kernel (and the checks it needs are
gone). The engine refuses inputs and scores that are not finite, so a degenerate update
cannot pass unnoticed."""

_configured: Path | None = None
_kernels: list[Any] = []  # every dispatcher @kernel made, in decoration order
_outside: list[Any] = []  # those of them @outside_kernel made

F = TypeVar("F", bound=Callable[..., Any])


def source_files() -> list[Path]:
    """The kernel source files, sorted: each ``.py`` file of :data:`KERNEL_SOURCES`."""
    files: set[Path] = set()
    for source in KERNEL_SOURCES:
        files.update(source.rglob("*.py") if source.is_dir() else [source])
    return sorted(files)


def source_digest() -> str:
    """16 hex digits of SHA-256 over the numba version and every kernel source file."""
    digest = hashlib.sha256(numba.__version__.encode())
    for path in source_files():
        digest.update(str(path.relative_to(_SERVICE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def configure(base: str | os.PathLike[str] | None = None) -> Path:
    """Cache every kernel decorated from now on under ``base/<source digest>``; returns that
    directory (created, and checked to be writable).

    Idempotent: a second call returns the directory of the first (a different explicit
    ``base`` raises ``RuntimeError``). Raises ``RuntimeError`` too when kernels were already
    decorated without a cache, i.e. the process imported the learners before configuring.
    """
    global _configured
    if base is None:
        env = os.environ.get("ACOG_JIT_CACHE_DIR") or os.environ.get("NUMBA_CACHE_DIR")
        root = Path(env) if env else Path.home() / ".cache" / "acog-service" / "numba"
    else:
        root = Path(base)
    if _configured is not None:
        if base is not None and _configured != root.resolve() / _configured.name:
            raise RuntimeError(f"the kernel cache is already configured as {_configured}, not under {root}")
        return _configured
    if _kernels:
        raise RuntimeError(
            f"{len(_kernels)} kernels were decorated before jit_cache.configure(): call it before "
            "importing service.learners (numba fixes a function's cache location when it is decorated)"
        )
    digest = source_digest()
    target = root.resolve() / digest
    try:
        target.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=target).close()
    except OSError:
        target = Path(tempfile.gettempdir()) / "acog-service-numba" / digest
        target.mkdir(parents=True, exist_ok=True)
    _configured = target
    return target


def configured() -> Path | None:
    """The directory kernels are cached in, or ``None`` (compiled in memory only)."""
    return _configured


def kernels() -> list[Any]:
    """Every numba dispatcher made by :func:`kernel` so far (for warm-up accounting)."""
    return list(_kernels)


def kernel(fn: F) -> F:
    """``@kernel``: compile ``fn`` with numba in nopython mode (see :data:`OPTIONS`), cached in
    the configured directory, or in memory only when :func:`configure` was not called."""
    source = Path(fn.__code__.co_filename)
    if not any(source == s or s in source.parents for s in KERNEL_SOURCES):
        raise RuntimeError(f"kernel {fn.__qualname__} is defined in {source}, outside KERNEL_SOURCES")
    return _compile(fn)


def outside_kernel(fn: F) -> F:
    """``@outside_kernel``: a kernel defined outside :data:`KERNEL_SOURCES` (the research
    package's), cached like :func:`kernel`'s. It may call kernels of its own file and of
    :data:`KERNEL_SOURCES` only: numba keys a cached function on its own file, and the directory's
    digest covers the others it inlines, so neither kind of edit leaves stale machine code."""
    dispatcher = _compile(fn)
    _outside.append(dispatcher)
    return dispatcher


def outside_kernels() -> list[Any]:
    """The dispatchers of :func:`kernels` that :func:`outside_kernel` made."""
    return list(_outside)


def _compile(fn: F) -> F:
    if _configured is None:
        dispatcher = njit(cache=False, **OPTIONS)(fn)
    else:
        with _numba_cache_dir(_configured):
            dispatcher = njit(cache=True, **OPTIONS)(fn)
    _kernels.append(dispatcher)
    return dispatcher


@contextlib.contextmanager
def _numba_cache_dir(directory: Path) -> Iterator[None]:
    """``numba.config.CACHE_DIR`` for one decoration only (numba's locator reads it there)."""
    before = numba.config.CACHE_DIR  # type: ignore[attr-defined]
    numba.config.CACHE_DIR = str(directory)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        numba.config.CACHE_DIR = before  # type: ignore[attr-defined]
