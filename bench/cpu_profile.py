"""Where a server process spends its CPU per request, from py-spy samples, by component.

``py-spy record --gil --format raw`` samples the thread that holds the GIL ``rate`` times a
second, so ``samples / rate`` is the Python CPU time of the window, and with the number of
requests served in that window, ``samples / rate / requests`` is the CPU time a request costs.
Each sample is charged to one component: the first frame, walking from the innermost frame
outwards, whose file belongs to a component in :data:`COMPONENTS` (so ``json`` called by
pydantic is pydantic's, and a Redis command sent through redis-py is redis-py's).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

COMPONENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("redis-py client (fallbacks; the log follower's reads)", ("redis/",)),
    ("pydantic (body and reply models)", ("pydantic/", "pydantic_core/")),
    ("Prometheus client", ("prometheus_client/",)),
    ("our API layer (middleware, auth, schemas)", ("service/api/",)),
    ("our engine, features, learners, store", ("service/", "model_store/")),
    ("FastAPI (routing, dependencies, telemetry check)", ("fastapi/", "opentelemetry/")),
    ("Starlette (requests, responses, middleware)", ("starlette/",)),
    ("uvicorn and httptools (HTTP protocol)", ("uvicorn/", "httptools/")),
    ("asyncio event loop and streams", ("asyncio/", "selectors.py")),
)
"""(name, file-path fragments), most specific first; a sample matching none is *other*."""

OTHER = "other (stdlib, numba dispatch, ...)"
TICKS = os.sysconf("SC_CLK_TCK")
_FRAME = re.compile(r"\((?P<file>[^()]*?):\d+\)$")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` and all its descendants, from /proc (a server's worker
    processes included)."""
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def available() -> bool:
    return shutil.which("py-spy") is not None


def start(pid: int, seconds: float, output: Path, rate: int = 250) -> subprocess.Popen[bytes]:
    """Start ``py-spy record`` on ``pid`` for ``seconds``; wait on the returned process."""
    command = [
        "py-spy",
        "record",
        "--pid",
        str(pid),
        "--gil",
        "--nonblocking",
        "--format",
        "raw",
        "--rate",
        str(rate),
        "--duration",
        f"{max(1, round(seconds))}",
        "--output",
        str(output),
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def component(frames: list[str]) -> str:
    """The component a sample (outermost frame first) is charged to."""
    for frame in reversed(frames):
        match = _FRAME.search(frame)
        if match is None:
            continue
        path = match["file"]
        for name, fragments in COMPONENTS:
            if any(fragment in path for fragment in fragments):
                return name
    return OTHER


def samples_by_component(lines: Iterable[str]) -> Counter[str]:
    """Sum py-spy's raw (collapsed) lines ``frame;frame;... count`` by component."""
    counts: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack and count.isdigit():
            counts[component(stack.split(";"))] += int(count)
    return counts


def us_per_request(raw: Path, rate: int, requests: int) -> dict[str, float]:
    """Microseconds of CPU (GIL held) per request, by component, from a raw py-spy file."""
    with raw.open() as lines:
        counts = samples_by_component(lines)
    return {name: n / rate / requests * 1e6 for name, n in counts.most_common()}
