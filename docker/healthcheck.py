"""Container health check: exit 0 when the service answers ``GET /healthz`` with 2xx.

The slim base image has no curl, so Docker's HEALTHCHECK runs this with the image's Python
(standard library only). The port comes from ``ACOG_PORT`` (default 8000), the host from
``ACOG_HEALTHCHECK_HOST`` (default 127.0.0.1); any error or non-2xx answer exits 1.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request


def main() -> int:
    host = os.environ.get("ACOG_HEALTHCHECK_HOST", "127.0.0.1")
    port = os.environ.get("ACOG_PORT", "8000")
    url = f"http://{host}:{port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            status = response.status
    except (urllib.error.URLError, OSError) as exc:  # HTTPError (non-2xx) is a URLError
        print(f"unhealthy: {url}: {exc}", file=sys.stderr)
        return 1
    if not 200 <= status < 300:
        print(f"unhealthy: {url}: HTTP {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
