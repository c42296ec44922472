"""How records are spelled inside Redis values, and read back.

- A label-log event (stream entry) has the fields ``n`` (its sequence number, first),
  ``pid`` (prediction id), ``x`` (the encoded :class:`Example`), ``y`` and ``yhat`` (``"1"``,
  ``"-1"``, or ``"0"`` for a never-scored ``yhat``), ``tp`` and ``tl`` (prediction and label
  time, ``repr`` of a float, which reads back exactly). Any other event has ``n``, ``kind``,
  ``body`` (opaque bytes) and ``tl``. Entries of layout 1 have no ``n``.
- A pending prediction is a hash with ``pid``, ``x``, ``yhat``, ``score`` and ``tp``, same
  spellings (a hash rather than a packed string, so the label script can copy fields into
  the event without parsing anything).
- A model record is a hash ``generation``, ``config`` (JSON, sorted keys), ``created_at``.
- A checkpoint's manifest (an entry of the checkpoint index list) is
  ``"<applied stream id> <token> <chunk count> <byte count> <sequence number> <state time ms>"``
  (layout 1: the first four only); its blob is the concatenation of the fields ``"0"`` ..
  ``"<chunk count - 1>"`` of the chunk hash named by the token
  (:meth:`model_store.keys.GenerationKeys.checkpoint_chunks`), ``byte count`` long. The commit
  script writes it, so it is spelled there too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

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
    sid = stream_id if isinstance(stream_id, str) else stream_id.decode("ascii")
    try:
        seq = int(fields[b"n"]) if b"n" in fields else None
        kind = fields.get(b"kind")
        if kind is not None:
            return LogEntry(
                stream_id=sid,
                seq=seq,
                prediction_id="",
                example=None,
                y=0,
                yhat=0,
                predicted_at=float(fields[b"tl"]),
                labelled_at=float(fields[b"tl"]),
                kind=kind.decode("ascii"),
                body=bytes(fields[b"body"]),
            )
        return LogEntry(
            stream_id=sid,
            seq=seq,
            prediction_id=fields[b"pid"].decode("ascii"),
            example=decode_example(fields[b"x"]),
            y=int(fields[b"y"]),
            yhat=int(fields[b"yhat"]),
            predicted_at=float(fields[b"tp"]),
            labelled_at=float(fields[b"tl"]),
        )
    except (KeyError, ValueError) as exc:
        raise StoreError(f"malformed label-log entry {stream_id!r}: {exc}") from exc


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


def model_record(name: str, fields: Mapping[bytes, bytes]) -> ModelRecord:
    """A :class:`ModelRecord` from a model's record hash (HGETALL, bytes)."""
    try:
        return ModelRecord(
            name=name,
            generation=int(fields[b"generation"]),
            config=dict(json.loads(fields[b"config"])),
            created_at=float(fields[b"created_at"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"malformed record of model {name!r}: {exc}") from exc


def legacy_model_record(raw: bytes) -> ModelRecord:
    """A record of the layout-1 ``acog:models`` hash (JSON)."""
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


def config_json(config: Mapping[str, object]) -> str:
    """A model configuration as stored: compact JSON with sorted keys (so equal configurations
    are equal text)."""
    return json.dumps(config, sort_keys=True, allow_nan=False, separators=(",", ":"))


def checkpoint_manifest(entry: bytes) -> tuple[str, str, int, int, int | None, float | None]:
    """A checkpoint index entry as (applied stream id, token, chunk count, byte count, sequence number,
    the state's time in unix seconds); the last two are None for a layout-1 entry."""
    try:
        parts = entry.decode("ascii").split(" ")
        if len(parts) not in (4, 6):
            raise ValueError(f"{len(parts)} fields")
        applied_id, token, chunks, size, seq, written = [*parts, "", ""][:6]
        parse_stream_id(applied_id)
        return (
            applied_id,
            token,
            int(chunks),
            int(size),
            int(seq) if seq else None,
            int(written) / 1000 if written else None,
        )
    except ValueError as exc:
        raise StoreError(f"malformed checkpoint index entry {entry[:100]!r}") from exc
