"""Where the repository, the provisioned dashboard and the committed snapshot are."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "docker" / "grafana" / "dashboards" / "acog.json"
DEFAULT_OUTPUT = ROOT / "docs" / "dashboard" / "acog-dashboard.png"


def repo_on_path() -> None:
    """The repository root on ``sys.path``: the test support modules are reused from there."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
