"""A Dockerfile as a list of stages, and the build context that a .dockerignore leaves.

Enough of Docker's rules to check the files statically: line continuations, comments,
parser directives, ``ARG`` defaults substituted into ``FROM``, exec-form JSON arguments;
and .dockerignore patterns as moby's patternmatcher reads them (``**``, ``!`` exceptions,
last match wins, a pattern that matches a directory excludes what is under it).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: FROM, RUN, COPY, ...
    arguments: str  # the rest of the line, continuations joined

    def exec_form(self) -> list[str] | None:
        """The JSON array of an exec-form CMD/ENTRYPOINT/RUN, else None."""
        text = self.arguments.strip()
        if not text.startswith("["):
            return None
        value = json.loads(text)
        assert isinstance(value, list) and all(isinstance(item, str) for item in value), text
        return value

    def flags(self) -> dict[str, str]:
        """Leading ``--name=value`` flags (COPY --from=..., HEALTHCHECK --interval=...)."""
        return dict(re.findall(r"--([\w-]+)=(\S+)", self.arguments.split(" CMD ")[0]))


@dataclass
class Stage:
    base: str  # the image or earlier stage named in FROM, ARGs substituted
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def index(self, keyword: str) -> int:
        """Position of the last ``keyword`` instruction (-1 when absent)."""
        positions = [n for n, i in enumerate(self.instructions) if i.keyword == keyword]
        return positions[-1] if positions else -1


def instructions(text: str) -> list[Instruction]:
    result: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue  # blank, comment or parser directive
        if pending and line.startswith("#"):
            continue  # comments inside a continued instruction are dropped by Docker too
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, arguments = line.partition(" ")
        result.append(Instruction(keyword.upper(), arguments.strip()))
    if pending:
        raise ValueError("Dockerfile ends inside a line continuation")
    return result


def stages(text: str) -> list[Stage]:
    """The build stages, with global ``ARG`` defaults substituted into each ``FROM``."""
    args: dict[str, str] = {}
    result: list[Stage] = []
    for instruction in instructions(text):
        if instruction.keyword == "ARG" and not result:
            name, _, default = instruction.arguments.partition("=")
            args[name.strip()] = default.strip().strip('"')
        elif instruction.keyword == "FROM":
            words = [w for w in instruction.arguments.split() if not w.startswith("--platform")]
            base = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), words[0])
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            result.append(Stage(base=base, name=name))
        elif result:
            result[-1].instructions.append(instruction)
    return result


def env_values(stage: Stage, chain: list[Stage]) -> dict[str, str]:
    """ENV values in effect in ``stage``: those of the stages it builds on, then its own."""
    by_name = {s.name: s for s in chain if s.name}
    lineage = []
    current: Stage | None = stage
    while current is not None:
        lineage.append(current)
        current = by_name.get(current.base)
    values: dict[str, str] = {}
    for ancestor in reversed(lineage):
        for instruction in ancestor.all("ENV"):
            for key, value in re.findall(r"(\w+)=(\"[^\"]*\"|\S+)", instruction.arguments):
                values[key] = value.strip('"')
    return values


# --- .dockerignore -------------------------------------------------------------------------------


def _compile(pattern: str) -> re.Pattern[str]:
    regex = ""
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                regex += "(?:.*/)?"
                i += 1
            else:
                regex += ".*"
            continue
        if char == "*":
            regex += "[^/]*"
        elif char == "?":
            regex += "[^/]"
        elif char == "[":
            end = pattern.index("]", i + 1)
            regex += "[" + pattern[i + 1 : end].replace("!", "^", 1) + "]"
            i = end
        elif char == "\\" and i + 1 < len(pattern):
            i += 1
            regex += re.escape(pattern[i])
        else:
            regex += re.escape(char)
        i += 1
    return re.compile(f"^{regex}$")


@dataclass(frozen=True)
class IgnoreRule:
    pattern: str
    exclude: bool  # False for a "!" exception
    regex: re.Pattern[str]


def ignore_rules(text: str) -> list[IgnoreRule]:
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exclude = not line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        rules.append(IgnoreRule(pattern, exclude, _compile(pattern)))
    return rules


def is_ignored(path: str, rules: list[IgnoreRule]) -> bool:
    """Whether ``path`` (relative, '/'-separated) is left out of the build context."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    ignored = False
    for rule in rules:
        if any(rule.regex.match(prefix) for prefix in prefixes):
            ignored = rule.exclude
    return ignored


def build_context(root: Path = ROOT, dockerignore: Path = DOCKERIGNORE) -> dict[str, int]:
    """Every file Docker would send as the build context: relative path -> size in bytes."""
    rules = ignore_rules(dockerignore.read_text()) if dockerignore.exists() else []
    can_prune = all(rule.exclude for rule in rules)
    files: dict[str, int] = {}
    for directory, dirnames, filenames in os.walk(root):
        relative_dir = os.path.relpath(directory, root)
        prefix = "" if relative_dir == "." else relative_dir.replace(os.sep, "/") + "/"
        if can_prune:
            dirnames[:] = [d for d in dirnames if not is_ignored(prefix + d, rules)]
        for filename in filenames:
            relative = prefix + filename
            if not is_ignored(relative, rules):
                files[relative] = (Path(directory) / filename).stat().st_size
    return files
