"""``python -m bench.quality``: see :mod:`bench.quality.cli`."""

from bench.quality.cli import main

raise SystemExit(main())
