"""How records are spelled inside Redis values, and read back.

- A label-log event (stream entry) has the fields ``pid`` (prediction id), ``x`` (the
  encoded :class:`Example`), ``y`` and ``yhat`` (``"1"``, ``"-1"``, or ``"0"`` for a
  never-scored ``yhat``), ``tp`` and ``tl`` (prediction and label time, ``repr`` of a float,
  which reads back exactly).
- A pending prediction is a hash with ``pid``, ``x``, ``yhat``, ``score`` and ``tp``, same
  spellings (a hash rather than a packed string, so the label script can copy fields into
  the event without parsing anything).
- A model record is JSON in ``acog:models``.
- A checkpoint's manifest (an entry of the checkpoint index list) is
  ``"<applied stream id> <token> <chunk count> <byte count>"``; its blob is the
  concatenation of the fields ``"0"`` .. ``"<chunk count - 1>"`` of the chunk hash named by
  the token (:meth:`model_store.keys.GenerationKeys.checkpoint_chunks`), ``byte count`` long.
  The commit script writes it, so it is spelled there too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from .examples import decode_example
from .ids import parse_stream_id
from .protocol import LogEntry, ModelRecord, PendingPrediction, StoreError


def format_float(value: float) -> str:
    """A float as text that :func:`float` reads back to the same value (``repr``)."""
    return repr(float(value))


def format_label(value: int, *, allow_zero: bool = False) -> str:
    """``+1``/``-1`` (or 0 when ``allow_zero``) as event text; anything else is a ``ValueError``."""
    if isinstance(value, bool) or value not in ((1, -1, 0) if allow_zero else (1, -1)):
        raise ValueError(f"a label is +1 or -1, got {value!r}")
    return "1" if value == 1 else ("-1" if value == -1 else "0")


def log_entry(stream_id: bytes | str, fields: Mapping[bytes, bytes]) -> LogEntry:
    """A :class:`LogEntry` from one stream entry as redis-py returns it (bytes, no decoding)."""
    try:
        return LogEntry(
            stream_id=stream_id if isinstance(stream_id, str) else stream_id.decode("ascii"),
            prediction_id=fields[b"pid"].decode("ascii"),
            example=decode_example(fields[b"x"]),
            y=int(fields[b"y"]),
            yhat=int(fields[b"yhat"]),
            predicted_at=float(fields[b"tp"]),
            labelled_at=float(fields[b"tl"]),
        )
    except (KeyError, ValueError) as exc:
        raise StoreError(f"malformed label-log entry {stream_id!r}: {exc}") from exc


EVENT_FIELDS = (b"pid", b"x", b"y", b"yhat", b"tp", b"tl")
"""The fields of an event, in the order every event is written (the scripts rely on it)."""


def log_entries(flat: Sequence[bytes]) -> list[LogEntry]:
    """Log entries from a script's flat backlog: per entry its id then the values of EVENT_FIELDS."""
    width = 1 + len(EVENT_FIELDS)
    if len(flat) % width:
        raise StoreError("malformed label-log backlog (an event has unexpected fields)")
    return [
        log_entry(flat[i], dict(zip(EVENT_FIELDS, flat[i + 1 : i + width], strict=True)))
        for i in range(0, len(flat), width)
    ]


def pending_fields(item: PendingPrediction, encoded_example: bytes) -> list[bytes | str]:
    """The pending hash's values, in the order the put-pending script stores them: pid, x, yhat, score, tp."""
    return [
        item.prediction_id,
        encoded_example,
        format_label(item.yhat),
        format_float(item.score),
        format_float(item.predicted_at),
    ]


def pending_prediction(fields: Mapping[bytes, bytes]) -> PendingPrediction:
    """A :class:`PendingPrediction` from its hash (HGETALL, bytes)."""
    try:
        return PendingPrediction(
            prediction_id=fields[b"pid"].decode("ascii"),
            example=decode_example(fields[b"x"]),
            yhat=int(fields[b"yhat"]),
            score=float(fields[b"score"]),
            predicted_at=float(fields[b"tp"]),
        )
    except (KeyError, ValueError) as exc:
        raise StoreError(f"malformed pending prediction: {exc}") from exc


def model_record_json(record: ModelRecord) -> str:
    return json.dumps(
        {
            "name": record.name,
            "generation": record.generation,
            "config": record.config,
            "created_at": record.created_at,
        },
        allow_nan=False,
    )


def model_record(raw: bytes) -> ModelRecord:
    try:
        data = json.loads(raw)
        return ModelRecord(
            name=str(data["name"]),
            generation=int(data["generation"]),
            config=dict(data["config"]),
            created_at=float(data["created_at"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"malformed model record: {exc}") from exc


def checkpoint_manifest(entry: bytes) -> tuple[str, str, int, int]:
    """A checkpoint index entry as (applied stream id, token, chunk count, byte count)."""
    try:
        applied_id, token, chunks, size = entry.decode("ascii").split(" ")
        parse_stream_id(applied_id)
        return applied_id, token, int(chunks), int(size)
    except ValueError as exc:
        raise StoreError(f"malformed checkpoint index entry {entry[:100]!r}") from exc
