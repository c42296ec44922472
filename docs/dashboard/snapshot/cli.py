"""The command line: a live run (or a saved one), the page, its screenshot."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from . import __doc__ as package_doc
from .grid import layout, load_dashboard, page_height
from .page import render_page
from .page_data import read_data, save_data
from .paths import DEFAULT_OUTPUT
from .progress import log
from .screenshot import screenshot
from .stack import live_run
from .theme import PAGE_WIDTH


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=str(package_doc).split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=90.0, help="seconds of traffic to show")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the PNG to write")
    parser.add_argument("--rate", type=float, default=30.0, help="german examples per second")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, TSDB)")
    parser.add_argument("--save-data", type=Path, help="also write the collected series to this JSON file")
    parser.add_argument("--data", type=Path, help="redraw from a --save-data file instead of a live run")
    args = parser.parse_args(argv)
    began = time.monotonic()
    output: Path = args.output
    output.parent.mkdir(parents=True, exist_ok=True)
    if args.data:
        data = read_data(args.data, load_dashboard())
    else:
        workdir = Path(tempfile.mkdtemp(prefix="acog-dashboard-"))
        try:
            data = live_run(args.seconds, workdir, args.rate)
        finally:
            if args.keep:
                log(f"work dir kept: {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
    if args.save_data:
        save_data(data, args.save_data)
    empty = [
        f"{b.id} {b.title!r}" for b in layout(data.dashboard) if b.type != "row" and not data.series.get(b.id)
    ]
    html_path = output.with_suffix(".html")
    html_path.write_text(render_page(data))
    height = page_height(layout(data.dashboard))
    screenshot(html_path, output, PAGE_WIDTH, height)
    total = sum(len(s) for s in data.series.values())
    size = output.stat().st_size
    log(f"{len(data.series)} panels, {total} series; wrote {html_path} and {output} ({size} B)")
    if empty:
        log(f"panels without data: {', '.join(empty)}")
    log(f"done in {time.monotonic() - began:.0f} s")
    return 1 if empty or data.errors else 0
