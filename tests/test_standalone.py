"""The project stands alone: no tracked file points at documents or data outside the repository
(a sibling ``shared`` folder, design or algorithm notes kept elsewhere) or at tracker issue numbers.
What a maintainer needs is in ``docs/`` (architecture.md, learners.md, paper-figures.md)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(
    r"\.\./shared|/work/shared|shared/(?:docs|datasets|papers)|\"shared\"\s*/"
    r"|(?<![\w/-])(?:design|algorithms|algorithms-round2|paper-results|house-proposal|style)\.md"
    r"|\bissues?\s+#?\d+|\bissue-\d+",
    re.IGNORECASE,
)
ALLOWED = {
    # CI glue: the data set mirror and the papers sit beside the clone on the CI machine.
    ".ci/run",
    # The development worktrees' fallback when neither ACOG_DATASETS_DIR nor the cache has the data
    # (a fresh clone has no such folder, and the session then stops saying how to get them).
    "tests/conftest.py",
    "tests/test_standalone.py",
}


def tracked_text_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.splitlines() if (ROOT / name).is_file()]


def test_no_tracked_file_points_outside_the_repository() -> None:
    found = []
    for name in tracked_text_files():
        if name in ALLOWED:
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line):
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    assert found == []


def test_the_conftest_names_the_sibling_folder_only_as_a_fallback() -> None:
    text = (ROOT / "tests" / "conftest.py").read_text()
    lines = [line for line in text.splitlines() if OUTSIDE.search(line)]
    assert len(lines) == 1 and lines[0].startswith("_BESIDE = "), lines


def test_the_readme_points_at_the_maintainers_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    for doc in ("docs/architecture.md", "docs/learners.md"):
        assert f"]({doc})" in readme and (ROOT / doc).exists(), doc
