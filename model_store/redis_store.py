"""``RedisModelStore``: the :class:`~model_store.protocol.ModelStore` on Redis or Redis Cluster.

What lives where (keys in :mod:`model_store.keys`, value spellings in
:mod:`model_store.redis_layout`, scripts in :mod:`model_store.scripts`):

- shared by all models (hash tag ``{acog}``): the set of model names, the control stream of
  life-cycle events every replica follows, and the store's identity (epoch and layout);
- per model (hash tag ``{<model>}``): its record (current generation and configuration) and
  its generation counter; per generation the label log (a stream of numbered, self-contained
  events appended only by the append scripts, which check the generation is current), its
  sequence counter, ``done`` markers (one per labelled prediction id, holding the first
  outcome), pending predictions, the checkpoint-writer lease and the checkpoints (an index of
  manifests and one chunked hash per checkpoint, staged chunk by chunk and committed by one
  small script that checks the lease and that the state is the log prefix it claims).

Every hot-path call (``put_pending``, ``label``, ``append_examples``) is one script call,
so one round trip, with no KEYS/SCAN. Blocking reads (``follow_log``, ``follow_control``) go
through a client of their own, so that waiting readers never hold the connections requests
need. Every Redis failure surfaces as :class:`~model_store.protocol.StoreUnavailable` or
:class:`~model_store.protocol.StoreError`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ConnectionError, MovedError, NoScriptError, RedisError, TimeoutError

from .connection import (
    DEFAULT_CHECKPOINT_CHUNK_BYTES,
    Client,
    ConnectionSettings,
    NodeConnector,
    connect,
    node_connector,
    translate_redis_errors,
)
from .durability import Durability
from .examples import Example, encode_example
from .ids import (
    PredictionIdError,
    make_prediction_id,
    parse_prediction_id,
    parse_stream_id,
)
from .keys import (
    CONTROL,
    LAYOUT,
    LEGACY_GENERATIONS,
    LEGACY_MODELS,
    MODEL_NAMES,
    STORE_IDENTITY,
    GenerationKeys,
    ModelKeys,
    retired_legacy_key,
)
from .protocol import (
    NO_RETENTION,
    Appended,
    AppendResult,
    Checkpoint,
    ControlEvent,
    ControlOp,
    GenerationGone,
    LabelOutcome,
    LabelStatus,
    LogEntry,
    LogRetention,
    Manifest,
    ModelRecord,
    PendingLimitExceeded,
    PendingPrediction,
    StoreError,
    StoreIdentity,
    StoreUnavailable,
)
from .redis_layout import (
    checkpoint_manifest,
    config_json,
    format_float,
    format_label,
    legacy_model_record,
    log_entry,
    model_record,
    pending_fields,
)
from .scripts import (
    ADOPT_MODEL,
    APPEND_EVENT,
    APPEND_EXAMPLES,
    COMMIT_CHECKPOINT,
    CREATE_IDENTITY,
    DELETE_GENERATION,
    DELETE_MODEL,
    LABEL,
    LEASE,
    PUT_MODEL,
    PUT_PENDING,
    RAISE_GENERATION_COUNTER,
    STAGE_CHUNK,
)

log = logging.getLogger(__name__)

_COMMIT_ATTEMPTS = 5
"""Commits retried when another writer changed the checkpoint index in between."""

CONTROL_MAXLEN = 10_000
"""The control stream keeps about this many events (a replica that falls further behind
reconciles with the model records)."""

BLOCKING_CONNECTIONS = 256
"""Connections of the blocking-read client: one per followed log, plus the control stream."""


_XRead = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None
"""XREAD's reply as redis-py gives it (RESP2): per stream, its entries with their fields."""


def _ms(seconds: float, what: str) -> int:
    """A positive duration in whole milliseconds."""
    ms = round(seconds * 1000)
    if ms < 1:
        raise ValueError(f"{what} must be at least 1 ms, got {seconds!r} s")
    return ms


def _stream_id(stream_id: str) -> str:
    parse_stream_id(stream_id)
    return stream_id


def _text(value: Any) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else str(value)


def _gone(model: str, generation: int, current: Any) -> GenerationGone:
    text = _text(current)
    return GenerationGone(model, generation, int(text) if text not in ("", "0") else None)


def _plain_node_client(client: Client) -> NodeConnector:
    """Plain clients of single nodes with ``client``'s credentials (the store given a client, not a URL)."""
    kwargs = client.get_connection_kwargs()

    def connect_node(host: str, port: int) -> aioredis.Redis:
        return aioredis.Redis(
            host=host,
            port=port,
            username=kwargs.get("username"),
            password=kwargs.get("password"),
            socket_timeout=kwargs.get("socket_timeout"),
            socket_connect_timeout=kwargs.get("socket_connect_timeout"),
            decode_responses=False,
        )

    return connect_node


class RedisModelStore:
    """The model store on one Redis, or on a Redis Cluster (one slot per model, one for the rest).

    ``blocking`` is the client for blocking reads (default: a second client like ``client``).
    ``append_done_ttl_seconds`` is how long ``append_examples`` and ``append_event`` remember
    the ids they appended, so that a retried call appends nothing twice. A checkpoint blob is
    sent in commands of at most ``checkpoint_chunk_bytes``; its staged chunks expire
    ``checkpoint_staging_ttl_seconds`` after the last one written unless it is committed (so the
    chunks of a writer that crashed are dropped by Redis). A blocking read waits at most
    ``max_block_seconds`` (None: as long as asked), which must stay below the blocking client's
    socket timeout: a read still blocked when the socket times out would look like an outage.
    """

    def __init__(
        self,
        client: Client,
        *,
        blocking: Client | None = None,
        append_done_ttl_seconds: float = 600.0,
        checkpoint_chunk_bytes: int = DEFAULT_CHECKPOINT_CHUNK_BYTES,
        checkpoint_staging_ttl_seconds: float = 300.0,
        durability: Durability | None = None,
        max_block_seconds: float | None = None,
        node_client: NodeConnector | None = None,
    ) -> None:
        if checkpoint_chunk_bytes < 1:
            raise ValueError(f"checkpoint_chunk_bytes must be at least 1, got {checkpoint_chunk_bytes}")
        self._redis = client
        self._blocking = blocking or client
        self._durability = durability or Durability()
        self._connect_node = node_client or _plain_node_client(client)
        self._nodes: dict[tuple[str, int], aioredis.Redis] = {}
        self._append_done_ttl_ms = _ms(append_done_ttl_seconds, "append_done_ttl_seconds")
        self._chunk_bytes = checkpoint_chunk_bytes
        self._staging_ttl_ms = _ms(checkpoint_staging_ttl_seconds, "checkpoint_staging_ttl_seconds")
        self._max_block_ms = (
            None if max_block_seconds is None else _ms(max_block_seconds, "max_block_seconds")
        )
        register = client.register_script
        self._put_pending = register(PUT_PENDING)
        self._label = register(LABEL)
        self._append_examples = register(APPEND_EXAMPLES)
        self._append_event = register(APPEND_EVENT)
        self._put_model = register(PUT_MODEL)
        self._delete_model = register(DELETE_MODEL)
        self._adopt_model = register(ADOPT_MODEL)
        self._raise_generation_counter = register(RAISE_GENERATION_COUNTER)
        self._create_identity = register(CREATE_IDENTITY)
        self._lease = register(LEASE)
        self._stage_chunk_script = register(STAGE_CHUNK)
        self._commit_checkpoint = register(COMMIT_CHECKPOINT)
        self._delete_generation_script = register(DELETE_GENERATION)

    @classmethod
    def from_url(cls, url: str, settings: ConnectionSettings | None = None) -> RedisModelStore:
        """A store on ``url`` (``redis://``, ``rediss://``, ``unix://``, ``redis+cluster://``);
        connects lazily. Blocking reads wait at most half the socket timeout."""
        settings = settings or ConnectionSettings()
        return cls(
            connect(url, settings),
            blocking=connect(url, settings, max_connections=BLOCKING_CONNECTIONS),
            checkpoint_chunk_bytes=settings.checkpoint_chunk_bytes,
            durability=settings.durability,
            max_block_seconds=settings.socket_timeout / 2,
            node_client=node_connector(url, settings),
        )

    async def check_durability(self) -> None:
        """Refuse a durability option this Redis cannot honour (a clear error at start, not a
        silently weaker guarantee): ``WAITAOF`` needs Redis 7.2 on every primary."""
        wanted = self._durability
        if not wanted.active or not wanted.needs_waitaof:
            return
        if isinstance(self._redis, RedisCluster):
            with translate_redis_errors("check_durability"):
                await self._redis.initialize()
            clients = [self._node(node.host, int(node.port)) for node in self._redis.get_primaries()]
        else:
            clients = [self._redis]
        for client in clients:
            with translate_redis_errors("check_durability"):
                info = await client.info("server")
            version = tuple(int(part) for part in str(info.get("redis_version", "0")).split(".")[:2])
            if version < (7, 2):
                raise StoreError(
                    f"WAITAOF (fsync confirmation) needs Redis 7.2 or later; this server is "
                    f"{info.get('redis_version')}: use appendfsync always instead, or upgrade"
                )

    def _node(self, host: str, port: int) -> aioredis.Redis:
        """The plain client of one cluster node (made on first use, kept until :meth:`close`)."""
        client = self._nodes.get((host, port))
        if client is None:
            client = self._nodes[(host, port)] = self._connect_node(host, port)
        return client

    async def _primary(self, key: str) -> aioredis.Redis:
        """The client that writes ``key``: the single Redis, or a plain client of the cluster node
        that the cluster client maps ``key``'s slot to."""
        if not isinstance(self._redis, RedisCluster):
            return self._redis
        await self._redis.initialize()
        node = self._redis.get_node_from_key(key)
        if node is None:
            raise StoreUnavailable(f"no primary holds the slot of {key}", retry_after=1.0)
        return self._node(node.host, int(node.port))

    async def _refresh_slots(self, key: str) -> None:
        """After a cluster node refused or missed a durable append: a read of ``key`` through the
        cluster client, which follows MOVED or reconnects, and so updates its map of the slots."""
        try:
            await self._redis.exists(key)
        except RedisError as exc:
            log.info("refreshing the cluster's slot map after a refused append: %s", exc)

    async def _append(self, script: Any, keys: list[Any], args: list[Any], model: str, action: str) -> Any:
        """Run an append script; with :class:`Durability`, pipelined on one connection to the
        primary holding the model's slot with a fence write and the WAIT/WAITAOF (see
        :mod:`model_store.durability`), and refused (503) when that falls short."""
        wanted = self._durability
        if not wanted.active:
            with translate_redis_errors(action):
                return await script(keys=keys, args=args)
        fence = ModelKeys(model).wait_fence
        try:
            with translate_redis_errors(action):
                client = await self._primary(fence)
                reply, acknowledged = await self._durable_append(client, script, keys, args, fence)
        except StoreUnavailable as exc:
            if isinstance(self._redis, RedisCluster) and isinstance(
                exc.__cause__, (ConnectionError, TimeoutError, MovedError)
            ):
                await self._refresh_slots(fence)
            raise
        shortfall = wanted.shortfall(acknowledged)
        if shortfall is not None:
            raise StoreUnavailable(
                f"{action}: appended, but {shortfall} within {wanted.timeout_seconds:g} s; "
                "a retry answers the outcome",
                retry_after=1.0,
            )
        return reply

    async def _durable_append(
        self, client: aioredis.Redis, script: Any, keys: list[Any], args: list[Any], fence: str
    ) -> tuple[Any, Any]:
        """EVALSHA, the fence and the wait in one round trip on one connection; the script is loaded
        and the three sent again if that Redis did not know it (nothing ran then)."""
        wanted = self._durability
        for attempt in range(2):
            async with client.pipeline(transaction=False) as pipe:
                pipe.evalsha(script.sha, len(keys), *keys, *args)
                pipe.set(fence, b"1", px=wanted.fence_ttl_ms)
                pipe.execute_command(*wanted.command())
                reply, fenced, acknowledged = await pipe.execute(raise_on_error=False)
            if isinstance(reply, NoScriptError) and attempt == 0:
                await client.script_load(script.script)
                continue
            for result in (reply, fenced, acknowledged):
                if isinstance(result, Exception):
                    raise result
            return reply, acknowledged
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _block_ms(self, block_seconds: float) -> int:
        """XREAD's BLOCK for a read asked to wait ``block_seconds``: never past ``max_block_seconds``
        (the caller gets nothing sooner, which "up to" allows, rather than a socket timeout)."""
        ms = _ms(block_seconds, "block_seconds")
        return ms if self._max_block_ms is None else min(ms, self._max_block_ms)

    async def ping(self) -> None:
        with translate_redis_errors("ping"):
            await self._redis.ping()

    async def check_writable(self) -> None:
        """Redis refuses writes when it is a read-only replica, when a persistence error stopped
        writes (MISCONF), or when ``maxmemory`` is reached under ``noeviction``: a throw-away
        ``SET`` with a 1 ms expiry tells, through the same errors a real write would get."""
        with translate_redis_errors("a write probe"):
            await self._redis.set(f"acog:{{acog}}:probe:{secrets.token_hex(4)}", b"1", px=1)

    async def close(self) -> None:
        clients: dict[int, Client] = {id(self._redis): self._redis, id(self._blocking): self._blocking}
        for client in [*clients.values(), *self._nodes.values()]:
            await client.aclose()

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
                if name not in legacy:
                    return name
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
                raise _gone(name, expected_generation or 0, generation)
            await self._redis.sadd(MODEL_NAMES, name)  # again: a concurrent delete_model may have unlisted it
            record = ModelRecord(name, int(generation), config, created_at)
            await self._announce("put", name, record.generation)
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
            for _ in range(_COMMIT_ATTEMPTS):
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
        return _text(newest[0][0]) if newest else "0-0"

    async def follow_control(self, after: str, block_seconds: float) -> list[ControlEvent]:
        with translate_redis_errors("follow_control"):
            reply = await self._blocking.xread(
                {CONTROL: _stream_id(after)}, count=1000, block=self._block_ms(block_seconds)
            )
        events = []
        for _, entries in cast(_XRead, reply) or []:
            for event_id, fields in entries:
                op = _text(fields.get(b"op", b""))
                if op not in ("put", "delete", "checkpoint"):
                    continue  # an event of a newer version of the service: not for us
                events.append(
                    ControlEvent(
                        _text(event_id),
                        cast(ControlOp, op),
                        _text(fields[b"model"]),
                        int(fields[b"generation"]),
                    )
                )
        return events

    async def request_checkpoint(self, name: str, generation: int) -> None:
        with translate_redis_errors("request_checkpoint"):
            await self._announce("checkpoint", name, generation)

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
        items: Sequence[tuple[str, int]],
        labelled_at: float,
        done_ttl_seconds: float,
        label_window_seconds: float,
    ) -> list[LabelOutcome]:
        keys = GenerationKeys(model, generation)
        script_keys = [keys.log, keys.pending_index, keys.record, keys.sequence]
        args: list[str | int] = [
            generation,
            format_float(labelled_at),
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
        reply = await self._append(self._label, script_keys, args, model, "label")
        if not int(reply[0]):
            raise _gone(model, generation, reply[1])
        decided = iter(reply[1:])
        result = []
        for (prediction_id, _), outcome in zip(items, outcomes, strict=True):
            if outcome is None:
                status, sid, n, tp, tl, first = (_text(next(decided)) for _ in range(6))
                outcome = LabelOutcome(
                    prediction_id,
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
            raise _gone(model, generation, reply[1])
        flat = [_text(v) for v in reply[1:]]
        entries = [
            Appended(flat[i], int(flat[i + 1]) if flat[i + 1] else None) for i in range(0, len(flat), 2)
        ]
        return AppendResult(prediction_ids, entries)

    async def append_event(
        self, model: str, generation: int, kind: str, body: bytes, request_id: str, at: float
    ) -> tuple[Appended, bool]:
        keys = GenerationKeys(model, generation)
        if not kind or kind == "label" or not kind.isidentifier():
            raise ValueError(f"an event kind is an identifier other than 'label', got {kind!r}")
        reply = await self._append(
            self._append_event,
            [keys.log, keys.record, keys.sequence, keys.done(f"event:{request_id}")],
            [generation, kind, body, format_float(at), self._append_done_ttl_ms],
            model,
            "append_event",
        )
        if not int(reply[0]):
            raise _gone(model, generation, reply[1])
        n = _text(reply[2])
        return Appended(_text(reply[1]), int(n) if n else None), bool(int(reply[3]))

    async def read_log(self, model: str, generation: int, after: str, count: int) -> list[LogEntry]:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("read_log"):
            reply = await self._redis.xrange(keys.log, min=f"({_stream_id(after)}", max="+", count=count)
        raw = cast(list[tuple[bytes, dict[bytes, bytes]]], reply)
        return [log_entry(stream_id, fields) for stream_id, fields in raw]

    async def follow_log(
        self, model: str, generation: int, after: str, count: int, block_seconds: float
    ) -> list[LogEntry]:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("follow_log"):
            reply = await self._blocking.xread(
                {keys.log: _stream_id(after)}, count=count, block=self._block_ms(block_seconds)
            )
        return [
            log_entry(stream_id, fields)
            for _, entries in cast(_XRead, reply) or []
            for stream_id, fields in entries
        ]

    # -- checkpoints -----------------------------------------------------------------------

    async def lease(self, model: str, generation: int, holder: str, ttl_seconds: float) -> str:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("lease"):
            now = await self._lease(
                keys=[keys.writer_lease], args=[holder, _ms(ttl_seconds, "ttl"), "acquire"]
            )
        return _text(now)

    async def release_lease(self, model: str, generation: int, holder: str) -> None:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("release_lease"):
            await self._lease(keys=[keys.writer_lease], args=[holder, 1, "release"])

    async def write_checkpoint(
        self,
        model: str,
        generation: int,
        blob: bytes,
        applied_id: str,
        seq: int,
        written_at: float,
        keep: int,
        holder: str,
        retain: LogRetention = NO_RETENTION,
    ) -> bool:
        """Stage ``blob`` in chunks, then commit it (see the module docstring and COMMIT_CHECKPOINT).

        The commit is refused up front, before any chunk is sent, when it would be anyway.
        """
        keys = GenerationKeys(model, generation)
        if keep < 1:
            raise ValueError(f"keep at least one checkpoint, got keep={keep}")
        applied_id = _stream_id(applied_id)
        token = secrets.token_hex(8)
        chunk_key = keys.checkpoint_chunks(token)
        view = memoryview(blob).cast("B")
        starts = range(0, len(view), self._chunk_bytes)

        async def commit(index: list[bytes], staged: str) -> tuple[int, Any]:
            """COMMIT_CHECKPOINT of the ``staged`` token ('' only checks), given the index last read."""
            dropped = [keys.checkpoint_chunks(checkpoint_manifest(entry)[1]) for entry in index[keep - 1 :]]
            written, detail = await self._commit_checkpoint(
                keys=[keys.checkpoint_index, keys.log, keys.writer_lease, chunk_key, *dropped],
                args=[
                    applied_id,
                    seq,
                    keep,
                    staged,
                    len(starts),
                    len(view),
                    holder,
                    round(written_at * 1000),
                    retain.entries,
                    f"{max(0, round((written_at - retain.seconds) * 1000))}-0" if retain.seconds else "",
                    *index,
                ],
            )
            return int(written), detail

        with translate_redis_errors("write_checkpoint"):
            written, detail = await commit([], "")  # only checks, and reads the index
            if written == 2:
                try:
                    for number, start in enumerate(starts):
                        await self._stage_chunk_script(
                            keys=[chunk_key],
                            args=[number, view[start : start + self._chunk_bytes], self._staging_ttl_ms],
                        )
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
        where = f"checkpoint of {model} generation {generation} at entry {seq} ({applied_id})"
        if written == -1:
            raise StoreError(f"{where}: the log ends at {_text(detail)}; nothing was written")
        if written == -2:
            raise StoreError(f"{where}: its staged chunks expired before the commit; nothing was written")
        if written == -3:
            raise StoreError(f"{where}: the writer lease is held by {_text(detail)!r}, not {holder!r}")
        if written == -4:
            found = _text(detail)
            raise StoreError(
                f"{where}: the log entry there is {'missing' if not found else f'entry {found}'}, so the "
                "state is not the log prefix it claims; nothing was written"
            )
        return written == 1

    async def _drop_staged(self, chunk_key: str) -> None:
        """Delete staged chunks that will not be committed, if Redis answers (they expire anyway)."""
        try:
            if await self._redis.pttl(chunk_key) > 0:  # never a committed checkpoint's (no TTL)
                await self._redis.unlink(chunk_key)
        except Exception as exc:  # cleanup only: the error that got us here is what matters
            log.warning("could not drop the staged checkpoint chunks %s (they expire): %s", chunk_key, exc)

    async def checkpoint_index(self, model: str, generation: int) -> list[Manifest]:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("checkpoint_index"):
            index = cast(list[bytes], await self._redis.lrange(keys.checkpoint_index, 0, -1))
        return [Manifest(applied, seq, at) for applied, _, _, _, seq, at in map(checkpoint_manifest, index)]

    async def iter_checkpoints(self, model: str, generation: int) -> AsyncIterator[Checkpoint]:
        """Retained checkpoints, newest first, each blob fetched (chunk by chunk) only when reached.

        A checkpoint whose chunks are missing or do not add up to its recorded length (e.g. it
        was dropped by a concurrent commit while this read) comes with an empty blob, which
        the state codec refuses, and a warning is logged.
        """
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("load_checkpoints"):
            index = cast(list[bytes], await self._redis.lrange(keys.checkpoint_index, 0, -1))
        for entry in index:
            applied_id, token, chunks, size, seq, _ = checkpoint_manifest(entry)
            parts: list[bytes] = []
            for number in range(chunks):
                with translate_redis_errors("load_checkpoints"):
                    chunk = cast(
                        bytes | None, await self._redis.hget(keys.checkpoint_chunks(token), str(number))
                    )
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
            yield Checkpoint(applied_id, seq, blob)

    async def load_checkpoints(self, model: str, generation: int) -> list[Checkpoint]:
        return [checkpoint async for checkpoint in self.iter_checkpoints(model, generation)]
