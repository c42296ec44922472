"""Pending predictions and the label log, on Redis.

A part of :class:`~model_store.redis_store.RedisModelStore`, which sets the attributes it declares."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

from .connection import (
    Client,
    translate_redis_errors,
)
from .examples import Example, encode_example
from .ids import (
    PredictionId,
    make_prediction_id,
    parse_prediction_id,
    token_and_ms,
)
from .keys import GenerationKeys
from .protocol import (
    Appended,
    AppendResult,
    LabelOutcome,
    LabelStatus,
    LogEntry,
    LogMoved,
    PendingLimitExceeded,
    PendingPrediction,
)
from .redis_layout import (
    format_float,
    format_label,
    log_entry,
    pending_fields,
)
from .redis_values import (
    XReadReply,
    checked_stream_id,
    generation_gone,
    milliseconds,
    text_of,
)

log = logging.getLogger("model_store.redis_store")


class RedisLabelLog:
    _redis: Client
    _blocking: Client
    _put_pending: Any
    _label: Any
    _append_examples: Any
    _append_event: Any
    _append_done_ttl_ms: int
    _append: Any

    def _block_ms(self, block_seconds: float) -> int:
        raise NotImplementedError

    async def _run_script(self, script: Any, keys: list[Any], args: list[Any]) -> Any:
        raise NotImplementedError

    # -- pending predictions ---------------------------------------------------------------

    async def put_pending(
        self,
        model: str,
        generation: int,
        items: Sequence[PendingPrediction],
        ttl_seconds: float,
        max_pending: int | None = None,
    ) -> None:
        keys = GenerationKeys(model, generation)
        ttl_ms = milliseconds(ttl_seconds, "ttl_seconds")
        if not items:
            return
        script_keys = [keys.pending_index]
        args: list[bytes | str | int] = [-1 if max_pending is None else max(max_pending, 0)]
        for item in items:
            token, ms = token_and_ms(item.prediction_id, model, generation)
            script_keys.append(keys.pending(token))
            args += [token, ms + ttl_ms, *pending_fields(item, encode_example(item.example))]
        with translate_redis_errors("put_pending"):
            stored, count = await self._run_script(self._put_pending, script_keys, args)
        if not stored:
            raise PendingLimitExceeded(max_pending or 0, int(count), len(items))

    async def count_pending(self, model: str, generation: int, now: float) -> int:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("count_pending"):
            return int(await self._redis.zcount(keys.pending_index, int(now * 1000), "+inf"))

    async def sweep_expired(self, model: str, generation: int, now: float) -> int:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("sweep_expired"):
            return int(await self._redis.zremrangebyscore(keys.pending_index, "-inf", f"({int(now * 1000)}"))

    # -- the label log ---------------------------------------------------------------------

    async def label(
        self,
        model: str,
        generation: int,
        items: Sequence[tuple[PredictionId, int]],
        labelled_at: float,
        done_ttl_seconds: float,
        label_window_seconds: float,
    ) -> list[LabelOutcome]:
        keys = GenerationKeys(model, generation)
        script_keys = [keys.log, keys.pending_index, keys.record, keys.sequence]
        args: list[str | int] = [
            generation,
            format_float(labelled_at),
            milliseconds(done_ttl_seconds, "done_ttl_seconds"),
            milliseconds(label_window_seconds, "label_window_seconds"),
        ]
        outcomes: list[LabelOutcome | None] = []
        for pid, y in items:
            y_text = format_label(y)
            if (pid.model, pid.generation) != (model, generation):
                outcomes.append(LabelOutcome(str(pid), "unknown"))
                continue
            outcomes.append(None)  # decided by the script, in this order
            script_keys += [keys.pending(pid.token), keys.done(pid.token)]
            args += [str(pid), pid.token, pid.ms, y_text]
        reply = await self._append(self._label, script_keys, args, model, "label")
        if not int(reply[0]):
            raise generation_gone(model, generation, reply[1])
        decided = iter(reply[1:])
        result = []
        for (pid, _), outcome in zip(items, outcomes, strict=True):
            if outcome is None:
                status, sid, n, tp, tl, first = (text_of(next(decided)) for _ in range(6))
                outcome = LabelOutcome(
                    str(pid),
                    cast(LabelStatus, status),  # the script answers only LabelStatus values
                    sid or None,
                    int(n) if n else None,
                    float(tp) if tp else None,
                    float(tl) if tl else None,
                    int(first) if first else None,
                )
            result.append(outcome)
        return result

    async def append_examples(
        self,
        model: str,
        generation: int,
        items: Sequence[tuple[Example, int]],
        labelled_at: float,
    ) -> AppendResult:
        keys = GenerationKeys(model, generation)
        script_keys = [keys.log, keys.record, keys.sequence]
        args: list[bytes | str | int] = [generation, format_float(labelled_at), self._append_done_ttl_ms]
        prediction_ids = []
        for example, y in items:
            prediction_id = make_prediction_id(model, generation, labelled_at)
            prediction_ids.append(prediction_id)
            script_keys.append(keys.done(parse_prediction_id(prediction_id).token))
            args += [prediction_id, encode_example(example), format_label(y)]
        reply = await self._append(self._append_examples, script_keys, args, model, "append_examples")
        if not int(reply[0]):
            raise generation_gone(model, generation, reply[1])
        flat = [text_of(v) for v in reply[1:]]
        entries = [
            Appended(flat[i], int(flat[i + 1]) if flat[i + 1] else None) for i in range(0, len(flat), 2)
        ]
        return AppendResult(prediction_ids, entries)

    async def append_event(
        self,
        model: str,
        generation: int,
        kind: str,
        body: bytes,
        request_id: str,
        at: float,
        expected_seq: int | None = None,
    ) -> tuple[Appended, bool]:
        keys = GenerationKeys(model, generation)
        if not kind or kind == "label" or not kind.isidentifier():
            raise ValueError(f"an event kind is an identifier other than 'label', got {kind!r}")
        expected = "" if expected_seq is None else str(int(expected_seq))
        reply = await self._append(
            self._append_event,
            [keys.log, keys.record, keys.sequence, keys.done(f"event:{request_id}")],
            [generation, kind, body, format_float(at), self._append_done_ttl_ms, expected],
            model,
            "append_event",
        )
        if not int(reply[0]):
            raise generation_gone(model, generation, reply[1])
        if int(reply[0]) == 2:
            raise LogMoved(model, generation, int(expected), int(text_of(reply[1])))
        n = text_of(reply[2])
        return Appended(text_of(reply[1]), int(n) if n else None), bool(int(reply[3]))

    async def read_log(self, model: str, generation: int, after: str, count: int) -> list[LogEntry]:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("read_log"):
            reply = await self._redis.xrange(
                keys.log, min=f"({checked_stream_id(after)}", max="+", count=count
            )
        raw = cast(list[tuple[bytes, dict[bytes, bytes]]], reply)
        return [log_entry(stream_id, fields) for stream_id, fields in raw]

    async def follow_log(
        self, model: str, generation: int, after: str, count: int, block_seconds: float
    ) -> list[LogEntry]:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("follow_log"):
            reply = await self._blocking.xread(
                {keys.log: checked_stream_id(after)}, count=count, block=self._block_ms(block_seconds)
            )
        return [
            log_entry(stream_id, fields)
            for _, entries in cast(XReadReply, reply) or []
            for stream_id, fields in entries
        ]
