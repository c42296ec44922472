"""Print the project's third-party requirements from pyproject.toml, one per line.

The Dockerfile installs these before copying the source, so editing the code does not
invalidate the (large) dependency layer. Extras named on the command line are added;
self-references such as ``acog-service[bench]`` are expanded, never printed.

Usage: ``python requirements.py [PYPROJECT] [--extra NAME ...]``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(pyproject: Path, extras: list[str]) -> list[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    own_name = _normalise(project["name"])
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    result: list[str] = []
    seen_extras: set[str] = set()

    def add(specs: list[str]) -> None:
        for spec in specs:
            match = _NAME.match(spec)
            if match and _normalise(match.group(1)) == own_name:
                add_extras([e.strip() for e in (match.group(2) or "").split(",") if e.strip()])
            elif spec not in result:
                result.append(spec)

    def add_extras(names: list[str]) -> None:
        for name in names:
            if name in seen_extras:
                continue
            if name not in optional:
                raise SystemExit(f"unknown extra {name!r} in {pyproject}")
            seen_extras.add(name)
            add(optional[name])

    add(project.get("dependencies", []))
    add_extras(extras)
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pyproject", nargs="?", type=Path, default=Path("pyproject.toml"))
    parser.add_argument("--extra", action="append", default=[], help="an optional-dependencies group")
    args = parser.parse_args(argv)
    print("\n".join(requirements(args.pyproject, args.extra)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
