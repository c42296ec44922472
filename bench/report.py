"""One shared report file, several writers: replace a named section of ``docs/benchmarks.md``.

Each benchmark script owns one section, delimited by HTML comments that markdown does not
render::

    <!-- quality:begin -->
    ...whatever the quality benchmark wrote last...
    <!-- quality:end -->

:func:`write_section` replaces the body between the two markers of that name and leaves
every other byte of the file as it was, so the learning-quality benchmark and the
service-load benchmark can both write ``docs/benchmarks.md`` without clobbering each other.
A missing file is created (with a title), a missing section is appended at the end.
Writers describe the machine they measured on with :func:`cpu_model` and
:func:`package_versions`.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "benchmarks.md"
>>> write_section(path, "quality", "## Quality\\n\\nv1")
>>> write_section(path, "load", "## Load\\n\\nfast")
>>> write_section(path, "quality", "## Quality\\n\\nv2")
>>> read_section(path, "quality")
'## Quality\\n\\nv2'
>>> read_section(path, "load")
'## Load\\n\\nfast'
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = [
    "DEFAULT_PATH",
    "TITLE",
    "begin_marker",
    "carry_sections",
    "cpu_model",
    "end_marker",
    "package_versions",
    "publish",
    "read_section",
    "spread",
    "write_section",
]

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
TITLE = (
    "# Benchmarks\n\n"
    "Each section below is written by a benchmark script (named in it) between its "
    "`<!-- NAME:begin -->` / `<!-- NAME:end -->` markers; edit the scripts, not this file.\n"
)
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def begin_marker(name: str) -> str:
    return f"<!-- {name}:begin -->"


def end_marker(name: str) -> str:
    return f"<!-- {name}:end -->"


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise ValueError(f"section name must be letters, digits, '_', '.' or '-', got {name!r}")


def _span(text: str, name: str) -> tuple[int, int] | None:
    """``(start, end)`` of the body between the markers of ``name``, or None when absent.

    Raises ``ValueError`` when the markers are unbalanced (one without the other, the end
    before the begin, or a marker twice): the file was damaged and must not be guessed at.
    """
    begin, end = begin_marker(name), end_marker(name)
    n_begin, n_end = text.count(begin), text.count(end)
    if n_begin == n_end == 0:
        return None
    if n_begin != 1 or n_end != 1:
        raise ValueError(f"section {name!r}: expected one {begin} and one {end}, found {n_begin} and {n_end}")
    start = text.index(begin) + len(begin)
    stop = text.index(end)
    if stop < start:
        raise ValueError(f"section {name!r}: {end} comes before {begin}")
    return start, stop


def read_section(path: str | os.PathLike[str], name: str) -> str | None:
    """The body of section ``name`` (stripped of the newlines next to its markers), or None."""
    _check_name(name)
    p = Path(path)
    if not p.exists():
        return None
    text = p.read_text(encoding="utf-8")
    span = _span(text, name)
    if span is None:
        return None
    return text[span[0] : span[1]].strip("\n")


def write_section(path: str | os.PathLike[str], name: str, body: str) -> None:
    """Replace the body of section ``name`` in ``path`` with ``body``; nothing else changes.

    Creates the file (with :data:`TITLE`) or appends the section when absent. The file is
    replaced atomically (write to a temporary file beside it, then rename), so a reader or
    a crash never sees half a report.
    """
    _check_name(name)
    if begin_marker(name) in body or end_marker(name) in body:
        raise ValueError(f"the body of section {name!r} must not contain its own markers")
    p = Path(path)
    text = p.read_text(encoding="utf-8") if p.exists() else TITLE
    block = f"\n{body.strip(chr(10))}\n"
    span = _span(text, name)
    if span is None:
        sep = "" if text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        text = f"{text}{sep}{begin_marker(name)}{block}{end_marker(name)}\n"
    else:
        text = text[: span[0]] + block + text[span[1] :]
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_ANY_SECTION = re.compile(r"<!-- ([A-Za-z0-9_.-]+):begin -->.*?<!-- \1:end -->\n?", re.DOTALL)


def spread(values: Iterable[float], digits: int = 0) -> str:
    """The median of repeated runs and their range: ``"median (min to max)"``, with thousands separated."""
    values = list(values)
    middle = statistics.median(values)
    return f"{middle:,.{digits}f} ({min(values):,.{digits}f} to {max(values):,.{digits}f})"


def publish(text: str, output: str | os.PathLike[str] | None, name: str) -> int:
    """Print a benchmark's report and, given an ``output`` file, write it as section ``name``;
    returns the exit status 0, for a script's ``main`` to return."""
    print(text)
    if output:
        write_section(Path(output), name, text)
    return 0


def carry_sections(old_text: str, new_text: str) -> str:
    """``new_text`` with every marked section of ``old_text`` that it lacks appended, unchanged.

    For a script that writes a whole file (``bench.reproduction`` writes ``docs/reproduction.md``)
    while other scripts own named sections of it: a rewrite keeps their sections.

    >>> carry_sections("head\\n<!-- opid:begin -->\\nx\\n<!-- opid:end -->\\n", "new head\\n")
    'new head\\n\\n<!-- opid:begin -->\\nx\\n<!-- opid:end -->\\n'
    """
    kept = [m.group(0) for m in _ANY_SECTION.finditer(old_text) if begin_marker(m.group(1)) not in new_text]
    if not kept:
        return new_text
    sep = "" if new_text.endswith("\n\n") else ("\n" if new_text.endswith("\n") else "\n\n")
    return new_text + sep + "\n".join(block.rstrip("\n") + "\n" for block in kept)


def cpu_model(fallback: str = "unknown", cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's ``model name`` in ``cpuinfo``, or ``fallback`` when it has none (or is unreadable)."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return fallback


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """``{name: installed version}`` of the distributions ``names``, ``"absent"`` for those not installed."""
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out
