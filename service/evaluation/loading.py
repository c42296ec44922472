"""A data set named on the command line, loaded for a command (``acog evaluate``, ``acog replay``)."""

from __future__ import annotations

from typing import Any

from ..cli_options import UsageError
from .datasets import load


def load_dataset(name: str, datasets_dir: str | None) -> Any:
    """:func:`service.evaluation.datasets.load`, with a missing or malformed data set (the loaders
    raise ``OSError`` and ``ValueError`` naming the file, and the line) as a :class:`UsageError`."""
    try:
        return load(name, datasets_dir=datasets_dir)
    except (OSError, ValueError) as exc:
        text = str(exc)
        raise UsageError(text if repr(name) in text else f"data set {name!r}: {text}") from exc
