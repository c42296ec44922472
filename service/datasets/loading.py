"""A data set named on the command line, loaded for a command (``acog evaluate``, ``acog replay``)."""

from __future__ import annotations

from typing import Any

from scipy.io.matlab import MatReadError

from ..cli_options import UsageError
from .registry import load


def load_dataset(name: str, datasets_dir: str | None, *, both_classes: bool = True) -> Any:
    """:func:`service.datasets.load`, with a missing or malformed data set (the loaders
    raise ``OSError`` and ``ValueError`` naming the file, and the line; scipy a ``MatReadError`` for
    a ``.mat`` file that is not one) as a :class:`UsageError`; so is a data set without examples or
    features, or, when ``both_classes``, one whose labels are all of one class."""
    try:
        data = load(name, datasets_dir=datasets_dir)
    except (OSError, ValueError, MatReadError) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise UsageError(text if repr(name) in text else f"data set {name!r}: {text}") from None
    if data.n_samples == 0 or data.n_features == 0:
        raise UsageError(f"data set {name!r} holds no examples (an empty file?)")
    if both_classes and 0 in (data.n_positive, data.n_negative):
        only = "+1" if data.n_negative == 0 else "-1"
        raise UsageError(
            f"data set {name!r}: all {data.n_samples} labels are {only}; the protocol needs both classes"
        )
    return data
