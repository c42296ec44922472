"""``python -m bench.reproduction``: see :mod:`bench.reproduction.cli`."""

import sys

from bench.reproduction.cli import main

sys.exit(main())
