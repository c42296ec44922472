"""``RedisModelStore``: the :class:`~model_store.protocol.ModelStore` on Redis (redis-py asyncio).

What lives where (keys in :mod:`model_store.keys`, value spellings in
:mod:`model_store.redis_layout`, scripts in :mod:`model_store.scripts`):

- model records and generation counters: two hashes shared by all models;
- pending predictions: one hash per prediction id, expiring at ``prediction ms + label
  window``, plus a zset of their expiries per generation for counting and sweeping;
- the label log: one stream per model generation, self-contained events, appended only
  by the ``label`` and ``append_examples`` scripts; ``done`` markers (one per labelled
  prediction id, with a TTL) make labelling idempotent;
- checkpoints: per generation an index list (one small manifest per retained checkpoint,
  newest first) and one hash per checkpoint holding its blob in chunks. A blob is staged
  chunk by chunk (one command each, with a TTL, so other clients' commands run in between
  and a crashed writer's chunks expire), then committed by one small script that checks,
  persists, pushes the manifest, drops what ``keep`` drops and trims the log. Readers only
  follow the index, so they never see a checkpoint before its commit.

Every hot-path call (``put_pending``, ``label``, ``append_examples``) is one script call,
so one round trip, with no KEYS/SCAN. Every Redis failure surfaces as
:class:`~model_store.protocol.StoreUnavailable` or :class:`~model_store.protocol.StoreError`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Sequence
from typing import cast

import redis.asyncio as aioredis

from .connection import DEFAULT_CHECKPOINT_CHUNK_BYTES, ConnectionSettings, connect, translate_redis_errors
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
    checkpoint_manifest,
    format_float,
    format_label,
    log_entries,
    log_entry,
    model_record,
    model_record_json,
    pending_fields,
    pending_prediction,
)
from .scripts import APPEND_EXAMPLES, COMMIT_CHECKPOINT, LABEL, PUT_PENDING

log = logging.getLogger(__name__)

_COMMIT_ATTEMPTS = 5
"""Commits retried when another writer changed the checkpoint index in between (a replica)."""


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
    ids it made, so that a retried call appends nothing twice. A checkpoint blob is sent in
    commands of at most ``checkpoint_chunk_bytes``; its staged chunks expire
    ``checkpoint_staging_ttl_seconds`` after the last one written unless it is committed
    (so the chunks of a writer that crashed are dropped by Redis).
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        append_done_ttl_seconds: float = 600.0,
        checkpoint_chunk_bytes: int = DEFAULT_CHECKPOINT_CHUNK_BYTES,
        checkpoint_staging_ttl_seconds: float = 300.0,
    ) -> None:
        if checkpoint_chunk_bytes < 1:
            raise ValueError(f"checkpoint_chunk_bytes must be at least 1, got {checkpoint_chunk_bytes}")
        self._redis = client
        self._append_done_ttl_ms = _ms(append_done_ttl_seconds, "append_done_ttl_seconds")
        self._chunk_bytes = checkpoint_chunk_bytes
        self._staging_ttl_ms = _ms(checkpoint_staging_ttl_seconds, "checkpoint_staging_ttl_seconds")
        self._put_pending = client.register_script(PUT_PENDING)
        self._label = client.register_script(LABEL)
        self._append_examples = client.register_script(APPEND_EXAMPLES)
        self._commit_checkpoint = client.register_script(COMMIT_CHECKPOINT)

    @classmethod
    def from_url(cls, url: str, settings: ConnectionSettings | None = None) -> RedisModelStore:
        """A store on ``redis://``, ``rediss://`` or ``unix://`` ``url``; connects lazily."""
        settings = settings or ConnectionSettings()
        return cls(connect(url, settings), checkpoint_chunk_bytes=settings.checkpoint_chunk_bytes)

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
        with translate_redis_errors("delete_generation"):
            await self._delete_generation(GenerationKeys(name, generation))

    async def delete_model(self, name: str) -> None:
        validate_model_name(name)
        with translate_redis_errors("delete_model"):
            await self._redis.hdel(MODELS, name)
            last = int(await self._redis.hget(GENERATIONS, name) or 0)
            for generation in range(1, last + 1):
                await self._delete_generation(GenerationKeys(name, generation))

    async def _delete_generation(self, keys: GenerationKeys) -> None:
        """Drop the generation's keys and its committed checkpoints' chunk hashes in one transaction
        (WATCH on the index: a checkpoint committed meanwhile makes it start again)."""

        async def drop(pipe: aioredis.client.Pipeline) -> None:
            index = cast(list[bytes], await pipe.lrange(keys.checkpoint_index, 0, -1))
            chunk_keys = [keys.checkpoint_chunks(checkpoint_manifest(entry)[1]) for entry in index]
            pipe.multi()
            pipe.unlink(*keys.whole_generation(), *chunk_keys)

        await self._redis.transaction(drop, keys.checkpoint_index)

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
        """Stage ``blob`` in chunks, then commit it (see the module docstring and COMMIT_CHECKPOINT).

        The commit is refused up front, before any chunk is sent, when it would be anyway
        (an equal or newer checkpoint is stored, or ``applied_id`` is past the log's end).
        """
        keys = GenerationKeys(model, generation)
        if keep < 1:
            raise ValueError(f"keep at least one checkpoint, got keep={keep}")
        applied_id = _stream_id(applied_id)
        token = secrets.token_hex(8)
        chunk_key = keys.checkpoint_chunks(token)
        view = memoryview(blob).cast("B")
        starts = range(0, len(view), self._chunk_bytes)

        async def commit(index: list[bytes], staged: str) -> tuple[int, bytes | list[bytes]]:
            """COMMIT_CHECKPOINT of the ``staged`` token ('' only checks), given the index last read."""
            dropped = [keys.checkpoint_chunks(checkpoint_manifest(entry)[1]) for entry in index[keep - 1 :]]
            written, detail = await self._commit_checkpoint(
                keys=[
                    keys.checkpoint_index,
                    keys.log,
                    keys.legacy_checkpoints,
                    keys.legacy_checkpoint_ids,
                    chunk_key,
                    *dropped,
                ],
                args=[applied_id, keep, staged, len(starts), len(view), *index],
            )
            return int(written), detail

        with translate_redis_errors("write_checkpoint"):
            written, detail = await commit([], "")  # only checks, and reads the index
            if written == 2:
                try:
                    for number, start in enumerate(starts):
                        await self._stage_chunk(chunk_key, number, view[start : start + self._chunk_bytes])
                    for _ in range(_COMMIT_ATTEMPTS):
                        written, detail = await commit(cast(list[bytes], detail), token)
                        if written != 2:
                            break
                except Exception:
                    await self._drop_staged(chunk_key)  # best effort; else the TTL drops it
                    raise
                if written == 2:
                    await self._drop_staged(chunk_key)
                    raise StoreError(
                        f"checkpoint of {model} generation {generation}: the checkpoint index kept "
                        f"changing under {_COMMIT_ATTEMPTS} commits (other writers); nothing was written"
                    )
        if written == -1:
            raise StoreError(
                f"checkpoint of {model} generation {generation} claims events up to {applied_id}, "
                f"but its log ends at {cast(bytes, detail).decode('ascii')}; nothing was written"
            )
        if written == -2:
            raise StoreError(
                f"checkpoint of {model} generation {generation} at {applied_id}: its staged chunks "
                "expired before the commit; nothing was written"
            )
        return written == 1

    async def _stage_chunk(self, chunk_key: str, number: int, chunk: memoryview) -> None:
        """One command: store chunk ``number`` and (re)start the staging TTL of the chunk hash."""
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(chunk_key, str(number), chunk)  # redis-py sends a memoryview as is
            pipe.pexpire(chunk_key, self._staging_ttl_ms)
            await pipe.execute()

    async def _drop_staged(self, chunk_key: str) -> None:
        """Delete staged chunks that will not be committed, if Redis answers (they expire anyway)."""
        try:
            if await self._redis.pttl(chunk_key) > 0:  # never a committed checkpoint's (no TTL)
                await self._redis.unlink(chunk_key)
        except Exception as exc:  # cleanup only: the error that got us here is what matters
            log.warning("could not drop the staged checkpoint chunks %s (they expire): %s", chunk_key, exc)

    async def iter_checkpoints(self, model: str, generation: int) -> AsyncIterator[Checkpoint]:
        """Retained checkpoints, newest first, each blob fetched (chunk by chunk) only when reached.

        A checkpoint whose chunks are missing or do not add up to its recorded length (e.g. it
        was dropped by a concurrent commit while this read) comes with an empty blob, which
        the state codec refuses, and a warning is logged.
        """
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("load_checkpoints"):
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.lrange(keys.checkpoint_index, 0, -1)
                pipe.lrange(keys.legacy_checkpoint_ids, 0, -1)
                index, legacy_ids = await pipe.execute()
        for entry in index:
            applied_id, token, chunks, size = checkpoint_manifest(entry)
            parts: list[bytes] = []
            for number in range(chunks):
                with translate_redis_errors("load_checkpoints"):
                    reply = await self._redis.hget(keys.checkpoint_chunks(token), str(number))
                chunk = cast(bytes | None, reply)
                if chunk is None:
                    break
                parts.append(chunk)
            blob = b"".join(parts)
            del parts
            if len(blob) != size:
                log.warning(
                    "checkpoint of %s generation %d at %s is incomplete (%d of %d bytes in its chunks); "
                    "it cannot be used",
                    model,
                    generation,
                    applied_id,
                    len(blob),
                    size,
                )
                blob = b""
            yield Checkpoint(applied_id, blob)
        for position, raw_id in enumerate(legacy_ids):  # written before chunks; gone at the next commit
            with translate_redis_errors("load_checkpoints"):
                legacy = cast(bytes | None, await self._redis.lindex(keys.legacy_checkpoints, position))
            yield Checkpoint(raw_id.decode("ascii"), legacy or b"")

    async def load_checkpoints(self, model: str, generation: int) -> list[Checkpoint]:
        return [checkpoint async for checkpoint in self.iter_checkpoints(model, generation)]
