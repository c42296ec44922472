"""The store's identity and layout migration, the model records and the control stream, on Redis.

A part of :class:`~model_store.redis_store.RedisModelStore`, which sets the attributes it declares."""

from __future__ import annotations

import logging
import secrets
from typing import Any, cast

from .connection import (
    Client,
    translate_redis_errors,
)
from .keys import (
    CONTROL,
    LAYOUT,
    LEGACY_GENERATIONS,
    LEGACY_MODELS,
    MODEL_NAMES,
    STORE_IDENTITY,
    WRITE_PROBE_PREFIX,
    GenerationKeys,
    ModelKeys,
    retired_legacy_key,
)
from .protocol import (
    ControlEvent,
    ControlOp,
    ModelRecord,
    StoreError,
    StoreIdentity,
)
from .redis_layout import (
    checkpoint_manifest,
    config_json,
    format_float,
    legacy_model_record,
    model_record,
)
from .redis_values import (
    COMMIT_ATTEMPTS,
    CONTROL_MAXLEN,
    XReadReply,
    checked_stream_id,
    generation_gone,
    text_of,
)

log = logging.getLogger("model_store.redis_store")


class RedisModelRecords:
    _redis: Client
    _blocking: Client
    _create_identity: Any
    _adopt_model: Any
    _raise_generation_counter: Any
    _put_model: Any
    _delete_model: Any
    _delete_generation_script: Any
    _put_model_from_state: Any
    _stage_chunk_script: Any
    _chunk_bytes: int
    _staging_ttl_ms: int

    def _block_ms(self, block_seconds: float) -> int:
        raise NotImplementedError

    # -- identity and layout ---------------------------------------------------------------

    async def identity(self, create: bool) -> StoreIdentity | None:
        """With ``create``, one script writes whichever of the two fields is missing (concurrent
        creators agree on the first epoch; a creation cut short in between is completed)."""
        with translate_redis_errors("identity"):
            fields = cast(dict[bytes, bytes], await self._redis.hgetall(STORE_IDENTITY))
            if create and (b"epoch" not in fields or b"layout" not in fields):
                epoch, layout = await self._create_identity(
                    keys=[STORE_IDENTITY], args=[secrets.token_hex(8), LAYOUT]
                )
                fields = {b"epoch": epoch, b"layout": layout}
        if not fields:
            return None
        try:
            return StoreIdentity(fields[b"epoch"].decode("ascii"), int(fields[b"layout"]))
        except (KeyError, ValueError) as exc:
            raise StoreError(f"malformed store identity {fields!r}") from exc

    async def leftover_key(self) -> str | None:
        """A key of this service's (``acog:*``) other than layout 1's, if any is left (on every
        shard of a cluster): in a store without an identity, the remains of lost data."""
        legacy = {LEGACY_MODELS, LEGACY_GENERATIONS}
        with translate_redis_errors("leftover_key"):
            async for key in self._redis.scan_iter(match="acog:*", count=1000):
                name = key.decode() if isinstance(key, bytes) else str(key)
                if name not in legacy and not name.startswith(WRITE_PROBE_PREFIX):
                    return name  # a probe of a replica starting beside this one is no remains
        return None

    async def legacy_models(self) -> list[tuple[ModelRecord, int]]:
        """Records of layout 1 (one ``acog:models`` hash) not migrated yet, with the last generation
        issued for each name, sorted by name. A model whose layout-2 generation counter has
        reached its record's generation was adopted already (it may be deleted or replaced since)."""
        with translate_redis_errors("legacy_models"):
            raw = cast(dict[bytes, bytes], await self._redis.hgetall(LEGACY_MODELS))
            issued = cast(dict[bytes, bytes], await self._redis.hgetall(LEGACY_GENERATIONS))
        records = sorted((legacy_model_record(value) for value in raw.values()), key=lambda r: r.name)
        return [
            (r, int(issued.get(r.name.encode(), r.generation)))
            for r in records
            if await self.last_generation(r.name) < r.generation
        ]

    async def adopt_model(self, record: ModelRecord, last_generation: int, seq: int) -> bool:
        """Give a layout-1 model its own record and generation counter, its log's sequence counter
        starting at ``seq`` (the entries it already holds, counted by replaying them). The
        counter is written before the record, so no label is numbered from zero. False when
        the model was adopted already (by another replica), even if it was deleted or replaced
        since: its layout-2 generation counter has reached the record's generation."""
        keys = ModelKeys(record.name)
        gen = keys.generation(record.generation)
        with translate_redis_errors("adopt_model"):
            await self._redis.sadd(MODEL_NAMES, record.name)
            written = await self._adopt_model(
                keys=[keys.record, keys.generation_counter, gen.sequence],
                args=[
                    record.generation,
                    config_json(record.config),
                    format_float(record.created_at),
                    last_generation,
                    seq,
                ],
            )
        return bool(int(written))

    async def finish_layout_migration(self) -> None:
        """Carry the generations layout 1 issued over to every name's generation counter, models
        not adopted included (so a model created later under that name never reuses a generation,
        nor appends to a leftover layout-1 log); then keep the layout-1 hashes under
        :func:`~model_store.keys.retired_legacy_key` names (for an operator to inspect, then
        delete). Safe to run again after a crash half-way."""
        with translate_redis_errors("finish_layout_migration"):
            raw = cast(dict[bytes, bytes], await self._redis.hgetall(LEGACY_MODELS))
            issued = {
                name.decode(): int(value)
                for name, value in cast(
                    dict[bytes, bytes], await self._redis.hgetall(LEGACY_GENERATIONS)
                ).items()
            }
            for record in map(legacy_model_record, raw.values()):
                issued[record.name] = max(issued.get(record.name, 0), record.generation)
            for name, generation in sorted(issued.items()):
                await self._raise_generation_counter(
                    keys=[ModelKeys(name).generation_counter], args=[generation]
                )
            for key in (LEGACY_MODELS, LEGACY_GENERATIONS):
                if await self._redis.exists(key):
                    await self._redis.rename(key, retired_legacy_key(key))

    # -- models ----------------------------------------------------------------------------

    async def put_model(
        self, name: str, config: dict[str, Any], created_at: float, expected_generation: int | None
    ) -> ModelRecord:
        keys = ModelKeys(name)
        expected = "" if expected_generation is None else str(expected_generation)
        with translate_redis_errors("put_model"):
            await self._redis.sadd(MODEL_NAMES, name)  # before the record: a name without one is ignored
            ok, generation = await self._put_model(
                keys=[keys.record, keys.generation_counter],
                args=[config_json(config), format_float(created_at), expected],
            )
            if not int(ok):
                raise generation_gone(name, expected_generation or 0, generation)
            await self._redis.sadd(MODEL_NAMES, name)  # again: a concurrent delete_model may have unlisted it
            record = ModelRecord(name, int(generation), config, created_at)
            await self._announce("put", name, record.generation)
        return record

    async def put_model_from_state(
        self,
        name: str,
        config: dict[str, Any],
        created_at: float,
        expected_generation: int,
        blob: bytes,
        written_at: float,
    ) -> ModelRecord:
        """Stage ``blob`` in chunks under generation ``expected_generation + 1``, then write the record
        and index the chunks as its checkpoint at ``"0-0"`` in one script (PUT_MODEL_FROM_STATE), then
        announce; see the protocol."""
        keys = ModelKeys(name)
        generation = expected_generation + 1
        target = GenerationKeys(name, generation)
        token = secrets.token_hex(8)
        chunk_key = target.checkpoint_chunks(token)
        view = memoryview(blob).cast("B")
        starts = range(0, len(view), self._chunk_bytes)
        manifest = f"0-0 {token} {len(starts)} {len(view)} 0 {round(written_at * 1000)}"
        with translate_redis_errors("put_model_from_state"):
            await self._redis.sadd(MODEL_NAMES, name)
            try:
                for number, start in enumerate(starts):
                    await self._stage_chunk_script(
                        keys=[chunk_key],
                        args=[number, view[start : start + self._chunk_bytes], self._staging_ttl_ms],
                    )
                ok, detail = await self._put_model_from_state(
                    keys=[keys.record, keys.generation_counter, target.checkpoint_index, chunk_key],
                    args=[
                        config_json(config),
                        format_float(created_at),
                        expected_generation,
                        generation,
                        manifest,
                        len(starts),
                        len(view),
                    ],
                )
            except Exception:
                if await self._redis.pttl(chunk_key) > 0:  # staged, never committed
                    await self._redis.unlink(chunk_key)
                raise
            if int(ok) == 0:
                raise generation_gone(name, expected_generation, detail)
            if int(ok) != 1:
                raise StoreError(
                    f"generation {generation} of {name} could not be started from a state ({int(ok)}, "
                    f"{text_of(detail)}); nothing was written"
                )
            await self._redis.sadd(MODEL_NAMES, name)
            record = ModelRecord(name, generation, config, created_at)
            await self._announce("put", name, generation)
        return record

    async def load_model(self, name: str) -> ModelRecord | None:
        keys = ModelKeys(name)
        with translate_redis_errors("load_model"):
            fields = cast(dict[bytes, bytes], await self._redis.hgetall(keys.record))
        return model_record(name, fields) if fields else None

    async def load_models(self) -> list[ModelRecord]:
        with translate_redis_errors("load_models"):
            names = sorted(n.decode() for n in cast(set[bytes], await self._redis.smembers(MODEL_NAMES)))
        records = [await self.load_model(name) for name in names]
        return [r for r in records if r is not None]

    async def last_generation(self, name: str) -> int:
        keys = ModelKeys(name)
        with translate_redis_errors("last_generation"):
            return int(await self._redis.get(keys.generation_counter) or 0)

    async def delete_model(self, name: str) -> int | None:
        """Delete the record, unlist the name, announce, then drop the data of every generation
        issued up to the deletion. The name set and the record sit on different Redis Cluster
        slots, so another replica may create the model again meanwhile: its ``put_model`` lists
        the name after writing the record, and this re-lists it when a record is back after
        unlisting, so a current model always stays listed; its generation is numbered past the
        ones this drops."""
        keys = ModelKeys(name)
        with translate_redis_errors("delete_model"):
            deleted, issued = (
                int(value) for value in await self._delete_model(keys=[keys.record, keys.generation_counter])
            )
            await self._redis.srem(MODEL_NAMES, name)
            if await self._redis.exists(keys.record):
                await self._redis.sadd(MODEL_NAMES, name)
            if deleted:
                await self._announce("delete", name, deleted)
        for generation in range(1, issued + 1):
            await self.delete_generation(name, generation)
        return deleted or None

    async def delete_generation(self, name: str, generation: int) -> None:
        keys = GenerationKeys(name, generation)
        fixed = [k for k in keys.whole_generation() if k != keys.checkpoint_index]
        with translate_redis_errors("delete_generation"):
            index = cast(list[bytes], await self._redis.lrange(keys.checkpoint_index, 0, -1))
            for _ in range(COMMIT_ATTEMPTS):
                chunk_keys = [keys.checkpoint_chunks(checkpoint_manifest(entry)[1]) for entry in index]
                reply = await self._delete_generation_script(
                    keys=[keys.checkpoint_index, *fixed, *chunk_keys], args=[len(fixed), *index]
                )
                if int(reply[0]) == 1:
                    return
                index = cast(list[bytes], reply[1])
        raise StoreError(f"deleting generation {generation} of {name}: its checkpoints kept changing")

    # -- the control stream ----------------------------------------------------------------

    async def _announce(self, op: ControlOp, name: str, generation: int) -> None:
        await self._redis.xadd(
            CONTROL,
            {"op": op, "model": name, "generation": generation},
            maxlen=CONTROL_MAXLEN,
            approximate=True,
        )

    async def control_position(self) -> str:
        with translate_redis_errors("control_position"):
            newest = await self._redis.xrevrange(CONTROL, count=1)
        return text_of(newest[0][0]) if newest else "0-0"

    async def follow_control(self, after: str, block_seconds: float) -> list[ControlEvent]:
        with translate_redis_errors("follow_control"):
            reply = await self._blocking.xread(
                {CONTROL: checked_stream_id(after)}, count=1000, block=self._block_ms(block_seconds)
            )
        events = []
        for _, entries in cast(XReadReply, reply) or []:
            for event_id, fields in entries:
                op = text_of(fields.get(b"op", b""))
                if op not in ("put", "delete", "checkpoint"):
                    continue  # an event of a newer version of the service: not for us
                events.append(
                    ControlEvent(
                        text_of(event_id),
                        cast(ControlOp, op),
                        text_of(fields[b"model"]),
                        int(fields[b"generation"]),
                    )
                )
        return events

    async def request_checkpoint(self, name: str, generation: int) -> None:
        with translate_redis_errors("request_checkpoint"):
            await self._announce("checkpoint", name, generation)
