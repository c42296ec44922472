"""Image build step: import every module of the given packages once, as the app user.

Configuring the kernel cache (``service.jit_cache.configure``, before anything imports the
learners), importing, then running every learner once (``service.learners.warm_up``) lets
numba write its JIT cache into ``NUMBA_CACHE_DIR`` (under a subdirectory keyed by the kernels'
source digest), so a fresh container does not pay for compilation on its first request (pip
already compiled the bytecode at install time). Fails (exit 1) when the cache directory is not
writable or any module does not import, so a broken image never gets built.

Usage: ``python warmup.py [PACKAGE ...]`` (default: ``service model_store``).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import tempfile
import traceback
from collections.abc import Iterable

DEFAULT_PACKAGES = ("service", "model_store")


def check_cache_dir() -> str | None:
    """The numba cache directory, after checking that this user can write to it."""
    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    if not cache_dir:
        return None
    os.makedirs(cache_dir, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cache_dir):
        pass
    return cache_dir


def module_names(package: str) -> Iterable[str]:
    """The package and every submodule under it (``__main__`` modules excepted)."""
    root = importlib.import_module(package)
    yield package
    for info in pkgutil.walk_packages(getattr(root, "__path__", []), prefix=package + "."):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            yield info.name


def main(argv: list[str]) -> int:
    packages = argv or list(DEFAULT_PACKAGES)
    try:
        cache_dir = check_cache_dir()
    except OSError as exc:
        print(f"warm-up: NUMBA_CACHE_DIR is not writable: {exc}", file=sys.stderr)
        return 1
    if "service" in packages:
        from service import jit_cache

        jit_cache.configure()
    failed = 0
    imported = 0
    for package in packages:
        try:
            for name in module_names(package):
                importlib.import_module(name)
                imported += 1
        except Exception:
            traceback.print_exc()
            print(f"warm-up: importing {package} failed", file=sys.stderr)
            failed += 1
    if not failed and "service" in packages:
        from service.learners import warm_up

        print(f"warm-up: {warm_up().summary()}")  # what `acog warm-up` does
    cached = sum(len(files) for _, _, files in os.walk(cache_dir)) if cache_dir else 0
    print(
        f"warm-up: imported {imported} modules from {', '.join(packages)}; "
        f"{cached} files in NUMBA_CACHE_DIR={cache_dir}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
