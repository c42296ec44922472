"""What the Redis store's parts share: its constants, durations in milliseconds, stream ids, the
text of a reply, and the error of a refused append."""

from __future__ import annotations

from typing import Any

from .ids import parse_stream_id
from .protocol import GenerationGone

COMMIT_ATTEMPTS = 5
"""Commits retried when another writer changed the checkpoint index in between."""

CONTROL_MAXLEN = 10_000
"""The control stream keeps about this many events (a replica that falls further behind
reconciles with the model records)."""

BLOCKING_CONNECTIONS = 256
"""Connections of the blocking-read client: one per followed log, plus the control stream."""


XReadReply = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None
"""XREAD's reply as redis-py gives it (RESP2): per stream, its entries with their fields."""


def milliseconds(seconds: float, what: str) -> int:
    """A positive duration in whole milliseconds."""
    ms = round(seconds * 1000)
    if ms < 1:
        raise ValueError(f"{what} must be at least 1 ms, got {seconds!r} s")
    return ms


def checked_stream_id(stream_id: str) -> str:
    parse_stream_id(stream_id)
    return stream_id


def text_of(value: Any) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else str(value)


def generation_gone(model: str, generation: int, current: Any) -> GenerationGone:
    text = text_of(current)
    return GenerationGone(model, generation, int(text) if text not in ("", "0") else None)
