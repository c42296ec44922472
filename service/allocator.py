"""Keep glibc's malloc from holding on to the memory of large, short-lived buffers.

glibc serves a request of at least ``M_MMAP_THRESHOLD`` bytes (128 KiB) with its own
``mmap``, which ``free`` returns to the system at once. By default the threshold is
*dynamic*: each time such a block is freed, the threshold rises to its size (up to
32 MiB), so from then on blocks of that size come from the heap, and a heap fragmented by
long-lived arrays keeps their pages after they are freed. The service makes exactly that
pattern: learner state that lives for the whole run, beside checkpoint buffers (4 MiB
pieces, 8 MiB chunks) and batch arrays that live for one call. With ten SSACOG members
at d = 10^6 (458 MB of state) the process measured 683 MB of RSS growth per model; with
the threshold pinned, 443 MB (``python -m bench.service_load``, memory table).

:func:`pin_mmap_threshold` sets the threshold explicitly (which also stops the dynamic
adjustment), like the ``MALLOC_MMAP_THRESHOLD_`` environment variable, for the one
process that serves. It does nothing where the C library has no ``mallopt`` (musl, macOS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import cast

M_MMAP_THRESHOLD = -3
"""``mallopt`` parameter number, from glibc's ``malloc.h``."""

MMAP_THRESHOLD_BYTES = 128 * 1024
"""glibc's initial threshold, kept fixed."""


def mallopt() -> Callable[[int, int], int] | None:
    """The C library's ``mallopt``, or ``None`` where there is none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int)
    function.restype = ctypes.c_int
    return cast(Callable[[int, int], int], function)


def pin_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; ``False`` if this libc cannot."""
    function = mallopt()
    return function is not None and bool(function(M_MMAP_THRESHOLD, threshold))
