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

The class is composed of one part per role of the store: :mod:`model_store.redis_records` (identity,
model records, control stream), :mod:`model_store.redis_log` (pending predictions, the label log)
and :mod:`model_store.redis_checkpoints` (the lease, checkpoints); this module holds the
connections, the durability of appends and what they share.

Every hot-path call (``put_pending``, ``label``, ``append_examples``) is one script call,
so one round trip, with no KEYS/SCAN; it goes over the pipelined connections of
:mod:`model_store.pipelined`, with the redis-py client behind them. Blocking reads (``follow_log``,
``follow_control``) go through a client of their own, so that waiting readers never hold the
connections requests need. Every Redis failure surfaces as :class:`~model_store.protocol.StoreUnavailable` or
:class:`~model_store.protocol.StoreError`.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

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
from .keys import WRITE_PROBE_PREFIX, ModelKeys
from .pipelined import FALLBACK, pipelined_for
from .protocol import (
    StoreError,
    StoreUnavailable,
)
from .redis_checkpoints import RedisCheckpoints
from .redis_log import RedisLabelLog
from .redis_records import RedisModelRecords
from .redis_values import (
    BLOCKING_CONNECTIONS,
    milliseconds,
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
    PUT_MODEL_FROM_STATE,
    PUT_PENDING,
    RAISE_GENERATION_COUNTER,
    STAGE_CHUNK,
)

log = logging.getLogger(__name__)


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


class RedisModelStore(RedisModelRecords, RedisLabelLog, RedisCheckpoints):
    """The model store on one Redis, or on a Redis Cluster (one slot per model, one for the rest).

    ``blocking`` is the client for blocking reads (default: a second client like ``client``).
    ``append_done_ttl_seconds`` is how long ``append_examples`` and ``append_event`` remember
    the ids they appended, so that a retried call appends nothing twice. A checkpoint blob is
    sent in commands of at most ``checkpoint_chunk_bytes``; its staged chunks expire
    ``checkpoint_staging_ttl_seconds`` after the last one written unless it is committed (so the
    chunks of a writer that crashed are dropped by Redis). A blocking read waits at most
    ``max_block_seconds`` (None: as long as asked), which must stay below the blocking client's
    socket timeout: a read still blocked when the socket times out would look like an outage.
    ``pipelined`` sends the hot writes' scripts over :mod:`model_store.pipelined`'s connections when
    it can reach ``client``'s Redis or cluster nodes (else, or when False, through ``client``).
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
        pipelined: bool = True,
    ) -> None:
        if checkpoint_chunk_bytes < 1:
            raise ValueError(f"checkpoint_chunk_bytes must be at least 1, got {checkpoint_chunk_bytes}")
        self._redis = client
        self._blocking = blocking or client
        self._durability = durability or Durability()
        self._connect_node = node_client or _plain_node_client(client)
        self._nodes: dict[tuple[str, int], aioredis.Redis] = {}
        self._pipelined = pipelined_for(client) if pipelined else None
        self._append_done_ttl_ms = milliseconds(append_done_ttl_seconds, "append_done_ttl_seconds")
        self._chunk_bytes = checkpoint_chunk_bytes
        self._staging_ttl_ms = milliseconds(checkpoint_staging_ttl_seconds, "checkpoint_staging_ttl_seconds")
        self._max_block_ms = (
            None if max_block_seconds is None else milliseconds(max_block_seconds, "max_block_seconds")
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
        self._put_model_from_state = register(PUT_MODEL_FROM_STATE)

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
                return await self._run_script(script, keys, args)
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

    async def _run_script(self, script: Any, keys: list[Any], args: list[Any]) -> Any:
        """Run a registered ``script``: on the pipelined connection (:mod:`model_store.pipelined`) when
        there is one and it answers, else through the client, which loads, retries and reports."""
        if self._pipelined is not None:
            reply = await self._pipelined.evalsha(script.sha, keys, args)
            if reply is not FALLBACK:
                return reply
        return await script(keys=keys, args=args)

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
        ms = milliseconds(block_seconds, "block_seconds")
        return ms if self._max_block_ms is None else min(ms, self._max_block_ms)

    async def ping(self) -> None:
        with translate_redis_errors("ping"):
            await self._redis.ping()

    async def check_writable(self) -> None:
        """Redis refuses writes when it is a read-only replica, when a persistence error stopped
        writes (MISCONF), or when ``maxmemory`` is reached under ``noeviction``: a throw-away
        ``SET`` with a 1 ms expiry tells, through the same errors a real write would get."""
        with translate_redis_errors("a write probe"):
            await self._redis.set(f"{WRITE_PROBE_PREFIX}{secrets.token_hex(4)}", b"1", px=1)

    async def close(self) -> None:
        if self._pipelined is not None:
            self._pipelined.close()
        clients: dict[int, Client] = {id(self._redis): self._redis, id(self._blocking): self._blocking}
        for client in [*clients.values(), *self._nodes.values()]:
            await client.aclose()
