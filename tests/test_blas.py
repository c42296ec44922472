"""One OpenBLAS kernel for the serving processes (:mod:`service.blas`).

The hazard, on real BLAS: three learners (SDROGD, SACOG, NOGD) end a stream in other bits under
another OpenBLAS core type, and the others do not. The remedy: ``acog serve`` sets the core type
before anything loads numpy and says so in its log (a name OpenBLAS does not take is one line:
``tests/test_cli.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.blas import CORE_TYPE, NEEDS, VARIABLE, BlasPin, check_pin, cpu_flags, pin_blas_core
from tests.support.service_process import ROOT, ServiceProcess

BLAS_LEARNERS = {"sdrogd", "sacog", "nogd"}
"""The learners that call BLAS or LAPACK on their update path."""

STATES = """
import hashlib, json, sys
import numpy as np
from service import jit_cache
jit_cache.configure()
from service.learners import ALGORITHMS, create
rng = np.random.default_rng(0)
X = rng.standard_normal((600, 12))
X /= np.linalg.norm(X, axis=1, keepdims=True)
y = np.where(X[:, 0] + 0.3 * X[:, 1] ** 2 > 0.1, 1, -1)
out = {}
for name in sorted(ALGORITHMS):
    learner = create(name, n_features=12)
    learner.run(X, y)
    state = learner.to_state()
    digest = hashlib.sha256()
    for key in sorted(state):
        value = state[key]
        raw = np.ascontiguousarray(value).tobytes() if isinstance(value, np.ndarray) else repr(value)
        digest.update(raw if isinstance(raw, bytes) else raw.encode())
    out[name] = digest.hexdigest()
json.dump(out, sys.stdout)
"""


def states_under(core_type: str) -> dict[str, str]:
    """Every learner's state digest after one stream, in a process whose OpenBLAS uses ``core_type``."""
    env = {**os.environ, VARIABLE: core_type, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", STATES], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    states: dict[str, str] = json.loads(done.stdout)
    return states


def test_only_the_blas_learners_depend_on_the_core_type() -> None:
    """Haswell (AVX2) against Sandybridge (AVX) kernels, both runnable on this CPU when it has AVX2."""
    if not cpu_flags() >= NEEDS:
        pytest.fail("this test needs a CPU with AVX2 and FMA (every x86-64 server CPU since 2013)")
    haswell, sandybridge = states_under("Haswell"), states_under("Sandybridge")
    assert set(haswell) == set(sandybridge) and set(haswell) >= BLAS_LEARNERS
    differ = {name for name in haswell if haswell[name] != sandybridge[name]}
    assert differ == BLAS_LEARNERS


def test_serve_loads_the_pinned_kernels(tmp_path: Path, redis_url: str) -> None:
    service = ServiceProcess(tmp_path, {"ACOG_REDIS_URL": redis_url, "ACOG_WARM_UP": "models"})
    service.env.pop(VARIABLE, None)
    service.start()
    try:
        log = service.log()
    finally:
        service.stop()
    if cpu_flags() >= NEEDS:
        assert f"BLAS core type: {CORE_TYPE} (ACOG_BLAS_CORE_TYPE=auto, and the CPU has AVX2 and FMA)" in log
    else:
        assert "OpenBLAS chooses for it" in log


@pytest.mark.parametrize(
    ("setting", "environ", "flags", "expected", "variable"),
    [
        ("auto", {}, NEEDS | {"sse2"}, CORE_TYPE, CORE_TYPE),
        ("auto", {}, frozenset({"sse2", "avx"}), None, None),
        ("auto", {VARIABLE: "Zen"}, NEEDS, "Zen", "Zen"),  # the operator's choice is kept
        ("native", {}, NEEDS, None, None),
        ("Sandybridge", {VARIABLE: "Zen"}, NEEDS, "Sandybridge", "Sandybridge"),
    ],
)
def test_the_setting_decides_the_variable(
    setting: str, environ: dict[str, str], flags: frozenset[str], expected: str | None, variable: str | None
) -> None:
    env = dict(environ)
    pin = pin_blas_core(setting, env, flags, loaded=False)
    assert pin.core_type == expected
    assert env.get(VARIABLE) == variable
    assert pin.reason


def test_too_late_changes_nothing() -> None:
    env: dict[str, str] = {}
    pin = pin_blas_core("Haswell", env, NEEDS, loaded=True)
    assert pin == BlasPin(None, "numpy was loaded before the BLAS core type could be set") and not env


def test_cpu_flags_reads_the_first_flags_line(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert cpu_flags(cpuinfo) == {"fpu", "sse2", "avx2", "fma"}
    assert cpu_flags(tmp_path / "absent") == frozenset()


def test_check_pin_accepts_what_loaded() -> None:
    """In this (test) process numpy loaded with the kernels tests/conftest.py pinned: an unforced pin
    accepts what loaded, a pin that names another core type than the loaded one is refused."""
    loaded = check_pin(BlasPin(None, "native"))
    assert loaded
    other = "Sandybridge" if loaded != {"Sandybridge"} else "Haswell"
    with pytest.raises(ValueError, match=f"did not take '{other}'"):
        check_pin(BlasPin(other, "test"))
