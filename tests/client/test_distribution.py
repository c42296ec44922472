"""The client is its own small distribution (``client/pyproject.toml``: ``acog-client``, the
``service/client`` package installed as ``acog_client``): its wheel holds that package only,
requires httpx, websockets and pydantic, none of the server's dependencies (numpy, numba, scipy,
FastAPI, Redis), and imports from the wheel alone without loading any of them."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER_ONLY = {
    "numpy",
    "numba",
    "scipy",
    "fastapi",
    "starlette",
    "uvicorn",
    "redis",
    "model_store",
    "service",
}


def test_the_client_wheel_requires_and_loads_none_of_the_server(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT / "client")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = tmp_path.glob("acog_client-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(archive.read(metadata).decode())
    modules = {n.removeprefix("acog_client/") for n in names if n.startswith("acog_client/")}
    assert modules == {p.name for p in (ROOT / "service" / "client").glob("*.py")}
    assert {n.split("/")[0] for n in names} == {"acog_client", wheel.name.split("-")[0] + "-0.1.0.dist-info"}
    required = {
        re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in meta.get_all("Requires-Dist") or []
    }
    assert required == {"httpx", "websockets", "pydantic"}

    code = (
        f"import sys; sys.path.insert(0, {str(wheel)!r}); "
        "from acog_client import AsyncClient, Client, RetryPolicy, Sparse; "
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    loaded = set(out.stdout.split())
    assert "acog_client" in loaded and not loaded & SERVER_ONLY, sorted(loaded & SERVER_ONLY)
