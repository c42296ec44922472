"""Mapping raw labels (±1, 0/1, class numbers, digits) to int8 +1 / -1, +1 being the anomaly."""

from __future__ import annotations

import numpy as np


def map_labels(raw: np.ndarray, positive_label: float | None = None) -> np.ndarray:
    """Map raw labels to an int8 array of +1 / -1.

    With ``positive_label`` given, entries equal to it become +1 and all others -1 (it is an
    error if no entry equals it). Without it, labels already in {-1, +1} are kept, labels in
    {0, 1} map 1 -> +1 and 0 -> -1, and any other set of labels raises ``ValueError``.
    """
    values = np.asarray(raw, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {values.shape}")
    if positive_label is not None:
        positive = values == float(positive_label)
        if values.size and not positive.any():
            found = ", ".join(f"{v:g}" for v in np.unique(values)[:20])
            raise ValueError(f"positive_label={positive_label!r} does not occur; labels found: {found}")
        return np.where(positive, 1, -1).astype(np.int8)
    distinct = set(np.unique(values).tolist())
    if distinct <= {-1.0, 1.0}:
        return values.astype(np.int8)
    if distinct <= {0.0, 1.0}:
        return np.where(values == 1.0, 1, -1).astype(np.int8)
    found = ", ".join(f"{v:g}" for v in sorted(distinct)[:20])
    raise ValueError(
        f"labels {{{found}}} are neither ±1 nor 0/1; pass positive_label= to say which is the anomaly (+1)"
    )
