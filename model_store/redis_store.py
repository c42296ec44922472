"""``RedisModelStore``: the :class:`~model_store.protocol.ModelStore` on Redis (redis-py asyncio).

What lives where (keys in :mod:`model_store.keys`, value spellings in
:mod:`model_store.redis_layout`, scripts in :mod:`model_store.scripts`):

- model records and generation counters: two hashes shared by all models;
- pending predictions: one hash per prediction id, expiring at ``prediction ms + label
  window``, plus a zset of their expiries per generation for counting and sweeping;
- the label log: one stream per model generation, self-contained events, appended only
  by the ``label`` and ``append_examples`` scripts; ``done`` markers (one per labelled
  prediction id, with a TTL) make labelling idempotent;
- checkpoints: two lists per generation (blobs and applied ids, newest first).

Every hot-path call (``put_pending``, ``label``, ``append_examples``) is one script call,
so one round trip, with no KEYS/SCAN. Every Redis failure surfaces as
:class:`~model_store.protocol.StoreUnavailable` or :class:`~model_store.protocol.StoreError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import redis.asyncio as aioredis

from .connection import ConnectionSettings, connect, translate_redis_errors
from .examples import Example, encode_example
from .ids import (
    PredictionIdError,
    make_prediction_id,
    parse_prediction_id,
    parse_stream_id,
    validate_generation,
    validate_model_name,
)
from .keys import GENERATIONS, MODELS, GenerationKeys
from .protocol import (
    AppendResult,
    Checkpoint,
    LabelOutcome,
    LabelResult,
    LabelStatus,
    LogEntry,
    LogInfo,
    ModelRecord,
    PendingLimitExceeded,
    PendingPrediction,
    StoreError,
)
from .redis_layout import (
    format_float,
    format_label,
    log_entries,
    log_entry,
    model_record,
    model_record_json,
    pending_fields,
    pending_prediction,
)
from .scripts import APPEND_EXAMPLES, LABEL, PUT_PENDING, WRITE_CHECKPOINT


def _ms(seconds: float, what: str) -> int:
    """A positive duration in whole milliseconds."""
    ms = round(seconds * 1000)
    if ms < 1:
        raise ValueError(f"{what} must be at least 1 ms, got {seconds!r} s")
    return ms


def _stream_id(stream_id: str) -> str:
    parse_stream_id(stream_id)
    return stream_id


class RedisModelStore:
    """The model store on one Redis (or one Redis Cluster slot per model).

    ``append_done_ttl_seconds`` is how long ``append_examples`` remembers the prediction
    ids it made, so that a retried call appends nothing twice.
    """

    def __init__(self, client: aioredis.Redis, *, append_done_ttl_seconds: float = 600.0) -> None:
        self._redis = client
        self._append_done_ttl_ms = _ms(append_done_ttl_seconds, "append_done_ttl_seconds")
        self._put_pending = client.register_script(PUT_PENDING)
        self._label = client.register_script(LABEL)
        self._append_examples = client.register_script(APPEND_EXAMPLES)
        self._write_checkpoint = client.register_script(WRITE_CHECKPOINT)

    @classmethod
    def from_url(cls, url: str, settings: ConnectionSettings | None = None) -> RedisModelStore:
        """A store on ``redis://``, ``rediss://`` or ``unix://`` ``url``; connects lazily."""
        return cls(connect(url, settings))

    async def ping(self) -> None:
        with translate_redis_errors("ping"):
            await self._redis.ping()

    async def close(self) -> None:
        await self._redis.aclose()

    # -- model configs ------------------------------------------------------------------

    async def next_generation(self, name: str) -> int:
        validate_model_name(name)
        with translate_redis_errors("next_generation"):
            return int(await self._redis.hincrby(GENERATIONS, name, 1))

    async def save_model(self, record: ModelRecord) -> None:
        validate_model_name(record.name)
        validate_generation(record.generation)
        with translate_redis_errors("save_model"):
            await self._redis.hset(MODELS, record.name, model_record_json(record))

    async def load_models(self) -> list[ModelRecord]:
        with translate_redis_errors("load_models"):
            raw = cast(dict[bytes, bytes], await self._redis.hgetall(MODELS))
        return sorted((model_record(value) for value in raw.values()), key=lambda record: record.name)

    async def delete_generation(self, name: str, generation: int) -> None:
        keys = GenerationKeys(name, generation)
        with translate_redis_errors("delete_generation"):
            await self._redis.delete(*keys.whole_generation())

    async def delete_model(self, name: str) -> None:
        validate_model_name(name)
        with translate_redis_errors("delete_model"):
            await self._redis.hdel(MODELS, name)
            last = int(await self._redis.hget(GENERATIONS, name) or 0)
            async with self._redis.pipeline(transaction=False) as pipe:
                for generation in range(1, last + 1):
                    pipe.delete(*GenerationKeys(name, generation).whole_generation())
                await pipe.execute()

    # -- pending predictions ------------------------------------------------------------

    async def put_pending(
        self,
        model: str,
        generation: int,
        items: Sequence[PendingPrediction],
        ttl_seconds: float,
        max_pending: int | None = None,
    ) -> None:
        keys = GenerationKeys(model, generation)
        ttl_ms = _ms(ttl_seconds, "ttl_seconds")
        if not items:
            return
        script_keys = [keys.pending_index]
        args: list[bytes | str | int] = [-1 if max_pending is None else max(max_pending, 0)]
        for item in items:
            pid = parse_prediction_id(item.prediction_id)
            if (pid.model, pid.generation) != (model, generation):
                raise ValueError(
                    f"prediction id {item.prediction_id} is not of {model} generation {generation}"
                )
            script_keys.append(keys.pending(pid.token))
            args += [pid.token, pid.ms + ttl_ms, *pending_fields(item, encode_example(item.example))]
        with translate_redis_errors("put_pending"):
            stored, count = await self._put_pending(keys=script_keys, args=args)
        if not stored:
            raise PendingLimitExceeded(max_pending or 0, int(count), len(items))

    async def get_pending(self, prediction_id: str) -> PendingPrediction | None:
        try:
            pid = parse_prediction_id(prediction_id)
        except PredictionIdError:
            return None
        keys = GenerationKeys(pid.model, pid.generation)
        with translate_redis_errors("get_pending"):
            fields = cast(dict[bytes, bytes], await self._redis.hgetall(keys.pending(pid.token)))
        if fields.get(b"pid") != prediction_id.encode("ascii"):
            return None
        return pending_prediction(fields)

    async def count_pending(self, model: str, generation: int, now: float) -> int:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("count_pending"):
            return int(await self._redis.zcount(keys.pending_index, int(now * 1000), "+inf"))

    async def sweep_expired(self, model: str, generation: int, now: float) -> int:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("sweep_expired"):
            return int(await self._redis.zremrangebyscore(keys.pending_index, "-inf", f"({int(now * 1000)}"))

    # -- the label log ------------------------------------------------------------------

    async def label(
        self,
        model: str,
        generation: int,
        items: Sequence[tuple[str, int]],
        labelled_at: float,
        applied_up_to: str,
        done_ttl_seconds: float,
        label_window_seconds: float,
    ) -> LabelResult:
        keys = GenerationKeys(model, generation)
        script_keys = [keys.log, keys.pending_index]
        args: list[str | int] = [
            format_float(labelled_at),
            _stream_id(applied_up_to),
            _ms(done_ttl_seconds, "done_ttl_seconds"),
            _ms(label_window_seconds, "label_window_seconds"),
        ]
        outcomes: list[LabelOutcome | None] = []
        for prediction_id, y in items:
            y_text = format_label(y)
            try:
                pid = parse_prediction_id(prediction_id)
            except PredictionIdError:
                pid = None
            if pid is None or (pid.model, pid.generation) != (model, generation):
                outcomes.append(LabelOutcome(prediction_id, "unknown"))
                continue
            outcomes.append(None)  # decided by the script, in this order
            script_keys += [keys.pending(pid.token), keys.done(pid.token)]
            args += [prediction_id, pid.token, pid.ms, y_text]
        with translate_redis_errors("label"):
            raw_outcomes, raw_backlog = await self._label(keys=script_keys, args=args)
        decided = iter(raw_outcomes)
        result = []
        for (prediction_id, _), outcome in zip(items, outcomes, strict=True):
            if outcome is None:
                status, stream_id, predicted_at = (next(decided).decode("ascii") for _ in range(3))
                outcome = LabelOutcome(
                    prediction_id,
                    cast(LabelStatus, status),  # the script answers only LabelStatus values
                    stream_id or None,
                    float(predicted_at) if predicted_at else None,
                )
            result.append(outcome)
        return LabelResult(result, log_entries(raw_backlog))

    async def append_examples(
        self,
        model: str,
        generation: int,
        items: Sequence[tuple[Example, int]],
        labelled_at: float,
        applied_up_to: str,
    ) -> AppendResult:
        keys = GenerationKeys(model, generation)
        script_keys = [keys.log]
        args: list[bytes | str | int] = [
            format_float(labelled_at),
            _stream_id(applied_up_to),
            self._append_done_ttl_ms,
        ]
        prediction_ids = []
        for example, y in items:
            prediction_id = make_prediction_id(model, generation, labelled_at)
            prediction_ids.append(prediction_id)
            script_keys.append(keys.done(parse_prediction_id(prediction_id).token))
            args += [prediction_id, encode_example(example), format_label(y)]
        with translate_redis_errors("append_examples"):
            raw_backlog = await self._append_examples(keys=script_keys, args=args)
        return AppendResult(prediction_ids, log_entries(raw_backlog))

    async def read_log(self, model: str, generation: int, after: str, count: int) -> list[LogEntry]:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("read_log"):
            reply = await self._redis.xrange(keys.log, min=f"({_stream_id(after)}", max="+", count=count)
        raw = cast(list[tuple[bytes, dict[bytes, bytes]]], reply)
        return [log_entry(stream_id, fields) for stream_id, fields in raw]

    async def log_info(self, model: str, generation: int) -> LogInfo:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("log_info"):
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.xlen(keys.log)
                pipe.xrange(keys.log, count=1)
                pipe.xrevrange(keys.log, count=1)
                length, first, last = await pipe.execute()
        return LogInfo(
            int(length),
            first[0][0].decode("ascii") if first else None,
            last[0][0].decode("ascii") if last else None,
        )

    # -- checkpoints --------------------------------------------------------------------

    async def write_checkpoint(
        self, model: str, generation: int, blob: bytes, applied_id: str, keep: int
    ) -> bool:
        keys = GenerationKeys(model, generation)
        if keep < 1:
            raise ValueError(f"keep at least one checkpoint, got keep={keep}")
        with translate_redis_errors("write_checkpoint"):
            written, detail = await self._write_checkpoint(
                keys=[keys.checkpoints, keys.checkpoint_ids, keys.log],
                args=[blob, _stream_id(applied_id), keep],
            )
        if written < 0:
            raise StoreError(
                f"checkpoint of {model} generation {generation} claims events up to {applied_id}, "
                f"but its log ends at {detail.decode('ascii')}; nothing was written"
            )
        return bool(written)

    async def load_checkpoints(self, model: str, generation: int) -> list[Checkpoint]:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("load_checkpoints"):
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.lrange(keys.checkpoint_ids, 0, -1)
                pipe.lrange(keys.checkpoints, 0, -1)
                applied_ids, blobs = await pipe.execute()
        if len(applied_ids) != len(blobs):
            raise StoreError(f"checkpoint lists of {model} generation {generation} disagree in length")
        return [
            Checkpoint(applied_id.decode("ascii"), blob)
            for applied_id, blob in zip(applied_ids, blobs, strict=True)
        ]
