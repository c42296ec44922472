"""One BLAS kernel for every serving process, so that replicas on different x86-64 CPUs agree bit
for bit.

Most learners are numba loops without fast-math: each result is an IEEE-exact function of the
inputs, the same on every CPU (a run compiled for a generic x86-64 gives the states of one compiled
for the host). A few call BLAS and LAPACK through numpy: SDROGD's and SACOG's frequent-directions
sketch (an SVD, products), NOGD's Nystrom map (an eigendecomposition, products) and OPID's E-stage
after a schema change (its solves). OpenBLAS picks its kernels for the CPU it loads on (AVX-512 on
Skylake-X, AVX2 with other block sizes on Zen, ...), and the kernels round differently: the same
labels give SDROGD, SACOG and NOGD other states under the Haswell and the Sandybridge kernels, and
every other learner the same state (``tests/test_blas.py``). Replicas of such a model on a mixed
fleet (an Intel host and an AMD one, say), or a recovery on another machine, would then hold other
bits.

OpenBLAS reads ``OPENBLAS_CORETYPE`` once, when it loads, so ``acog serve`` sets it before
anything loads numpy (its workers inherit it), as ``ACOG_BLAS_CORE_TYPE`` says:

- ``auto`` (the default): :data:`CORE_TYPE`, OpenBLAS's AVX2 + FMA kernels, when the CPU has
  both (every x86-64 server CPU since Intel's Haswell, 2013, and AMD's Zen, 2017); on other CPUs
  (without AVX2, or not x86-64) nothing is forced, and replicas agree when their CPUs are of one
  kind. An ``OPENBLAS_CORETYPE`` already in the environment is the operator's and is kept;
- ``native``: OpenBLAS's own choice;
- any other value: that core type, for every process (``Sandybridge`` for a fleet with CPUs
  older than Haswell, say). OpenBLAS does not check that the CPU can run it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

CORE_TYPE = "Haswell"
"""The core type ``auto`` forces: OpenBLAS's AVX2 + FMA kernels."""
NEEDS = frozenset({"avx2", "fma"})
"""The CPU flags (``/proc/cpuinfo``) :data:`CORE_TYPE`'s kernels use."""
VARIABLE = "OPENBLAS_CORETYPE"
SETTING = "ACOG_BLAS_CORE_TYPE"
TOO_LATE = "numpy was loaded before the BLAS core type could be set"
"""The reason of a pin made after OpenBLAS loaded (it changes nothing)."""


@dataclass(frozen=True, slots=True)
class BlasPin:
    """What :func:`pin_blas_core` did: the core type the process's OpenBLAS will use when it is
    forced (else ``None``), and why, in words for the start-up log."""

    core_type: str | None
    reason: str


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The first CPU's flags, as Linux lists them; empty where there is no such file."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def pin_blas_core(
    setting: str | None = None,
    environ: MutableMapping[str, str] = os.environ,
    flags: frozenset[str] | None = None,
    loaded: bool | None = None,
) -> BlasPin:
    """Set ``OPENBLAS_CORETYPE`` in ``environ`` as ``setting`` says (default: ``environ``'s
    ``ACOG_BLAS_CORE_TYPE``, else ``auto``); see the module docstring. ``flags`` defaults to this
    CPU's, ``loaded`` to whether numpy (and so OpenBLAS) is already loaded in this process, in which
    case the setting can no longer apply."""
    if loaded if loaded is not None else "numpy" in sys.modules:
        return BlasPin(None, TOO_LATE)
    if setting is None:
        setting = environ.get(SETTING, "auto")
    if setting == "native":
        return BlasPin(None, "ACOG_BLAS_CORE_TYPE=native: OpenBLAS chooses for this CPU")
    if setting != "auto":
        environ[VARIABLE] = setting
        return BlasPin(setting, f"ACOG_BLAS_CORE_TYPE={setting}")
    if VARIABLE in environ:
        return BlasPin(environ[VARIABLE], f"{VARIABLE} was set in the environment")
    missing = NEEDS - (cpu_flags() if flags is None else flags)
    if missing:
        return BlasPin(
            None,
            f"this CPU lacks {', '.join(sorted(missing))}: OpenBLAS chooses for it, and replicas agree "
            "bit for bit on CPUs of one kind",
        )
    environ[VARIABLE] = CORE_TYPE
    return BlasPin(CORE_TYPE, "ACOG_BLAS_CORE_TYPE=auto, and the CPU has AVX2 and FMA")


def loaded_core_types() -> set[str]:
    """The core types of the OpenBLAS libraries this process has loaded (numpy's and scipy's each
    bundle one), as OpenBLAS reports them through threadpoolctl; loads numpy and scipy's BLAS."""
    import numpy  # noqa: F401  (loads numpy's OpenBLAS)
    import scipy.linalg  # noqa: F401  (and scipy's)
    from threadpoolctl import threadpool_info

    return {str(i.get("architecture")) for i in threadpool_info() if i.get("internal_api") == "openblas"}


def check_pin(pin: BlasPin) -> set[str]:
    """The core types loaded after ``pin``; raises ``ValueError`` naming the setting when OpenBLAS
    did not take a forced core type (it falls back to its own choice on a name it does not know)."""
    loaded = loaded_core_types()
    if pin.core_type is not None and {c.lower() for c in loaded} != {pin.core_type.lower()}:
        chose = ", ".join(sorted(loaded)) or "nothing"
        raise ValueError(
            f"OpenBLAS did not take {pin.core_type!r} as its core type; it chose {chose}. "
            "Core types are OpenBLAS's names, such as Haswell, SkylakeX, Zen or Sandybridge"
        )
    return loaded
