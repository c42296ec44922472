"""The page's screenshot with headless Chromium (Debian's ``chromium``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .progress import log


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        log("installing Debian's chromium (apt-get install -y chromium)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=False, env=env)
        if found := shutil.which("chromium"):
            return found
    raise SystemExit("render: no chromium; install it with `apt-get install -y chromium` (as root)")


def screenshot(html_path: Path, png_path: Path, width: int, height: int) -> None:
    """Headless Chromium, a fresh profile, no background networking (the network is closed)."""
    with tempfile.TemporaryDirectory(prefix="acog-chromium-") as profile:
        command = [
            chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1",
            f"--user-data-dir={profile}", f"--window-size={width},{height}",
            f"--screenshot={png_path}", html_path.resolve().as_uri(),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0 or not png_path.exists():
        raise SystemExit(f"render: chromium failed ({result.returncode}):\n{result.stderr[-3000:]}")
