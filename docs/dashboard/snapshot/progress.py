"""Progress lines of a run, on stdout."""

from __future__ import annotations


def log(message: str) -> None:
    print(f"[render] {message}", flush=True)
