"""Render the provisioned Grafana dashboard's panels from a live run, without Grafana.

The entry point the README links to; the work is done by the ``snapshot`` package next to
this file (see its docstring). Run from the repository root::

    .venv/bin/python docs/dashboard/render.py [--seconds 90] [--output docs/dashboard/acog-dashboard.png]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the package, however this file is run

from snapshot.cli import main

if __name__ == "__main__":
    sys.exit(main())
