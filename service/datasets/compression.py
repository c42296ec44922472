"""Reading a data file whole, decompressed when it is gzip, bzip2 or xz (told by its magic bytes)."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path


def read_bytes(path: Path) -> bytes:
    """The file's content, decompressed when it starts with a gzip, bzip2 or xz magic number."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head.startswith(b"\x1f\x8b"):
        with gzip.open(path, "rb") as fh:
            return fh.read()
    if head.startswith(b"BZh"):
        with bz2.open(path, "rb") as fh:
            return fh.read()
    if head.startswith(b"\xfd7zXZ\x00"):
        with lzma.open(path, "rb") as fh:
            return fh.read()
    return path.read_bytes()


def read_text(path: Path) -> str:
    """The file's (decompressed) content as UTF-8 text; ``ValueError`` naming the file if it is not."""
    raw = read_bytes(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a text file ({exc})") from None
