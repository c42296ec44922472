"""Importing the learners does no I/O; the process entry point chooses the kernels' disk cache.

These run in subprocesses: numba fixes a kernel's cache location when the kernel is decorated,
so only a fresh interpreter shows what an import, or a configured entry point, really does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from service import jit_cache
from service.learners import warm_up

ROOT = Path(__file__).resolve().parents[2]


def python(code: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("ACOG_JIT_CACHE_DIR", "NUMBA_CACHE_DIR")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**clean, "HOME": str(home), **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_importing_the_learners_changes_no_global_setting_and_writes_nothing(tmp_path: Path) -> None:
    """The issue's proof, then: nothing appeared under HOME, and configuring afterwards is refused."""
    result = python(
        """
        import numba; d = numba.config.CACHE_DIR; import service.learners; assert numba.config.CACHE_DIR == d
        from service import jit_cache
        try:
            jit_cache.configure()
        except RuntimeError as exc:
            print("refused:", exc)
        """,
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "refused:" in result.stdout and "before importing service.learners" in result.stdout
    assert list(tmp_path.iterdir()) == []


WARM = """
    import json, numba
    from service import jit_cache
    before = numba.config.CACHE_DIR
    directory = jit_cache.configure()
    from service.learners import warm_up
    done = warm_up(["perceptron"])
    print(json.dumps({"dir": str(directory), "compiled": done.compiled, "loaded": done.loaded,
                      "global_unchanged": numba.config.CACHE_DIR == before}))
"""


def test_configured_kernels_are_cached_in_and_loaded_from_the_configured_directory() -> None:
    """This process (configured by tests/conftest.py) compiles or loads the perceptron's kernels,
    so they are in its cache directory; a new process configured alike loads them from there."""
    directory = jit_cache.configured()
    assert directory is not None and directory.name == jit_cache.source_digest()
    warm_up(["perceptron"])
    files = [p.name for p in directory.rglob("*") if p.is_file()]
    assert any(f.startswith("driver.") and "flat_learn_one" in f and f.endswith(".nbc") for f in files), files
    assert any(f.startswith("inputs.dense_support") and f.endswith(".nbi") for f in files), files
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(WARM)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    other = json.loads(result.stdout)
    assert other["dir"] == str(directory)
    assert other["compiled"] == []
    loaded = {name.split("(")[0] for name in other["loaded"]}  # entry points; their callees are linked in
    single = {f"_flat_entries.<locals>.flat_{name}" for name in ("score_one", "learn_one")}  # per state type
    assert single | {"learn_stream", "dense_support", "sorted_support"} <= loaded
    assert other["global_unchanged"]  # every other numba user in the process keeps its own cache


def test_every_kernel_lives_in_a_digested_source_file() -> None:
    """A kernel outside KERNEL_SOURCES could go stale when the kernels it inlines change."""
    import service.learners  # noqa: F401 - decorates every learner kernel

    files = set(jit_cache.source_files())
    outside = jit_cache.outside_kernels()
    kernels = [k for k in jit_cache.kernels() if k not in outside]
    assert len(kernels) > 30
    assert {Path(k.py_func.__code__.co_filename) for k in kernels} <= files
    assert jit_cache.configured() is not None  # tests/conftest.py configured the test process


def test_a_kernel_outside_the_sources_is_declared_so_and_cached_like_the_others() -> None:
    """The research package's grid pass is not under KERNEL_SOURCES (editing research code does not
    start a fresh cache); it calls only the learners' kernels, so it may share their directory."""
    from research.protocols import sdrogd_grid

    grid = sdrogd_grid._grid_pass
    assert {grid, sdrogd_grid._step_all} <= set(jit_cache.outside_kernels())
    assert Path(sdrogd_grid.__file__) not in set(jit_cache.source_files())
    assert not any("research" in str(path) for path in jit_cache.source_files())
    assert grid._cache.cache_path.startswith(str(jit_cache.configured()))
