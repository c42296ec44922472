"""A lean pipelined connection for the store's hot writes: pending predictions and label appends.

redis-py's asyncio client spends several times the protocol floor's CPU on a lone call
(``bench.redis_round_trip`` measures both): the pool's checkout and its readiness probe, the retry wrapper, a
task per socket write under ``wait_for``, the reply callbacks. A request that arrives alone (an
open-loop load at a moderate rate, a lone label) pays all of it. This connection is that floor
instead: an ``asyncio.Protocol`` that writes each packed command at once and a ``hiredis.Reader``
that parses the replies, matched to their calls in order (Redis answers one connection's commands
in the order it received them), so any number of calls are in flight on the one connection.

It is a fast path, not a second client. A call either gets the script's reply or
:data:`FALLBACK`, and the store then runs the same call through its redis-py client, which loads
scripts, retries, reconnects and turns every failure into the store's errors as before:

- the script is not loaded on this Redis (``NOSCRIPT``), or Redis answered any other error
  (``MOVED`` on a cluster, ``LOADING``, ``OOM``, ...): the client's attempt answers, with the
  client's own handling of that error;
- the connection was lost (a restarted Redis, a connection it closed while idle): the call runs
  again through the client;
- it cannot connect: the client's attempt reports the outage. No new connection is tried for
  :data:`RECONNECT_PAUSE` seconds after a failed one.

Every script the store sends this way is idempotent (a pending write sets the same fields again; a
label or an example already appended is answered from its ``done`` marker), so a call that ran, or
ran in part, before the client's attempt is not applied twice: the same guarantee the client's own
retries rely on.

One failure is not handed back: a reply later than the socket timeout closes the connection and
raises redis-py's ``TimeoutError`` in every call in flight on it, as the client's own attempt would
end, and the store answers that Redis is unavailable. A Redis that does not answer is not asked
again through the client, so a request still waits for it at most what the client's retries allow.

Scope: a single Redis over TCP or a Unix socket, or each primary of a Redis Cluster over TCP
(:class:`PipelinedNodes`), with the client's credentials, database and RESP version (``HELLO`` with
``AUTH``, then ``SELECT``, as redis-py sends them), read from the client, so both paths get the same
replies. TLS or a credential provider get no pipelined connection (:func:`pipelined_for` answers
None), and their calls go through the client as before.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from typing import Any, Final

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisClusterException, RedisError, TimeoutError
from redis.utils import DEFAULT_RESP_VERSION

FALLBACK: Final = object()
"""What :meth:`PipelinedScripts.evalsha` answers when the call is for the redis-py client to make."""

RECONNECT_PAUSE = 1.0
"""Seconds without a new connection attempt after one failed."""


class _Lost(Exception):
    """The connection closed before the call's reply came."""


class _Late(_Lost):
    """A reply came later than the socket timeout (the connection is closed)."""


class _Replies(asyncio.Protocol):
    """One connection: writes packed commands, resolves each call's future with its parsed reply in
    order, and fails every call in flight when the connection closes or a reply is late."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float) -> None:
        self.loop = loop
        self.timeout = timeout
        self.reader = hiredis.Reader()
        self.waiting: collections.deque[tuple[float, asyncio.Future[Any]]] = collections.deque()
        self.transport: Any = None  # uvloop's transports are not asyncio.Transport subclasses
        self.lost = False
        self.late = False
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            if not self.waiting:  # a reply to no call (nothing the store asks for sends one)
                self.lost = True
                self.transport.abort()
                return
            _, future = self.waiting.popleft()
            if not future.done():  # a caller cancelled meanwhile: its reply is read and dropped
                future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._timer is not None:
            self._timer.cancel()
        waiting, self.waiting = self.waiting, collections.deque()
        error = _Late(f"no reply within {self.timeout:g} s") if self.late else _Lost(str(exc or "closed"))
        for _, future in waiting:
            if not future.done():
                future.set_exception(error)

    def call(self, packed: bytes) -> asyncio.Future[Any]:
        """Send ``packed``; the future holds its reply (a ``hiredis.ReplyError`` for an error reply)."""
        future = self.loop.create_future()
        try:
            self.transport.write(packed)
        except (OSError, RuntimeError) as exc:  # a transport closing under us (uvloop raises)
            self.lost = True
            future.set_exception(_Lost(str(exc)))
            return future
        self.waiting.append((self.loop.time() + self.timeout, future))
        if self._timer is None:
            self._timer = self.loop.call_at(self.waiting[0][0], self._check_late)
        return future

    def _check_late(self) -> None:
        """One timer at a time, at the oldest call's deadline: a late reply closes the connection."""
        self._timer = None
        if not self.waiting:
            return
        deadline = self.waiting[0][0]
        if deadline <= self.loop.time():
            self.lost = self.late = True
            self.transport.abort()  # connection_lost fails every call in flight
        else:
            self._timer = self.loop.call_at(deadline, self._check_late)

    async def handshake(self, commands: list[tuple[Any, ...]]) -> None:
        for command in commands:
            reply = await self.call(hiredis.pack_command(command))
            if isinstance(reply, hiredis.ReplyError):
                raise _Lost(f"{command[0]} refused: {reply}")


class PipelinedScripts:
    """Runs scripts by ``EVALSHA`` on one pipelined connection per event loop; see the module."""

    def __init__(
        self,
        *,
        host: str = "localhost",
        port: int = 6379,
        path: str | None = None,
        username: str | None = None,
        password: str | None = None,
        db: int = 0,
        protocol: int = 2,
        timeout: float = 5.0,
        connect_timeout: float = 2.0,
    ) -> None:
        self._address = (host or "localhost", port, path)
        self._handshake: list[tuple[Any, ...]] = []
        if protocol != 2:  # as redis-py connects: HELLO, with the credentials when there are any
            auth = () if password is None else ("AUTH", username or "default", password)
            self._handshake.append(("HELLO", protocol, *auth))
        elif password is not None:
            self._handshake.append(("AUTH", password) if username is None else ("AUTH", username, password))
        if db:
            self._handshake.append(("SELECT", db))
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._replies: _Replies | None = None
        self._connecting: _Replies | None = None
        self._closes = 0
        self._paused_until = 0.0

    async def evalsha(self, sha: str, keys: list[Any], args: list[Any]) -> Any:
        """The script's reply, or :data:`FALLBACK`: run the call through the redis-py client. Raises
        redis-py's ``TimeoutError`` when the reply is late."""
        replies = self._replies
        loop = asyncio.get_running_loop()
        if replies is None or replies.lost or replies.loop is not loop:
            if self._connecting is not None or time.monotonic() < self._paused_until:
                return FALLBACK  # meanwhile the client serves
            replies = await self._connect(loop)
            if replies is None:
                return FALLBACK
        try:
            reply = await replies.call(hiredis.pack_command(("EVALSHA", sha, len(keys), *keys, *args)))
        except _Late as late:
            raise TimeoutError(f"Timeout reading from the pipelined connection: {late}") from None
        except _Lost:
            return FALLBACK
        return FALLBACK if isinstance(reply, hiredis.ReplyError) else reply

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> _Replies | None:
        self.close()
        closes = self._closes
        replies = self._connecting = _Replies(loop, self._timeout)
        host, port, path = self._address
        try:
            async with asyncio.timeout(self._connect_timeout):
                if path is not None:
                    await loop.create_unix_connection(lambda: replies, path)
                else:
                    await loop.create_connection(lambda: replies, host, port)
                await replies.handshake(self._handshake)
            if self._closes != closes:  # closed while connecting: the connection is not kept
                raise _Lost("closed while connecting")
        except BaseException as exc:  # a refusal, or the caller cancelled: no half-open connection stays
            if replies.transport is not None:
                replies.transport.abort()
            if not isinstance(exc, (OSError, TimeoutError, _Lost)):
                raise
            self._paused_until = time.monotonic() + RECONNECT_PAUSE
            return None
        finally:
            self._connecting = None
        self._replies = replies
        return replies

    def close(self) -> None:
        """Close the connection (calls in flight get :data:`FALLBACK`); a connect under way ends
        without keeping its connection."""
        self._closes += 1
        connecting = self._connecting
        if connecting is not None and connecting.transport is not None and not connecting.loop.is_closed():
            connecting.transport.abort()
        replies, self._replies = self._replies, None
        if replies is not None and replies.transport is not None and not replies.lost:
            if replies.loop.is_closed():
                return
            replies.transport.close()


class PipelinedNodes:
    """Redis Cluster: a :class:`PipelinedScripts` per primary, each call sent to the node the cluster
    client maps the slot of its first key to (the store's scripts keep their keys in one slot). A node
    that no longer holds the slot answers ``MOVED``, an error reply like any other: the client makes
    that call, following the redirection and refreshing its map, and the next call goes to the new
    node. A call made before the client knows the slots goes through the client."""

    def __init__(self, cluster: RedisCluster, connection: Callable[[str, int], PipelinedScripts]) -> None:
        self._cluster = cluster
        self._connection = connection
        self._nodes: dict[tuple[str, int], PipelinedScripts] = {}

    async def evalsha(self, sha: str, keys: list[Any], args: list[Any]) -> Any:
        try:
            node = self._cluster.get_node_from_key(keys[0])
        except (RedisError, RedisClusterException):  # the slots are not known yet
            return FALLBACK
        if node is None:
            return FALLBACK
        address = (node.host, int(node.port))
        scripts = self._nodes.get(address)
        if scripts is None:
            scripts = self._nodes[address] = self._connection(*address)
        return await scripts.evalsha(sha, keys, args)

    def close(self) -> None:
        nodes, self._nodes = self._nodes, {}
        for scripts in nodes.values():
            scripts.close()


Pipelined = PipelinedScripts | PipelinedNodes


def pipelined_for(client: Any) -> Pipelined | None:
    """The pipelined connections to the Redis (or the Redis Cluster) ``client`` talks to, or None when
    it does not talk plain TCP or a Unix socket with (at most) a user name and password."""
    if isinstance(client, RedisCluster):
        kwargs = client.nodes_manager.connection_kwargs
        kind = kwargs.get("connection_class") or aioredis.Connection
        if not _plain(kind, kwargs) or issubclass(kind, aioredis.UnixDomainSocketConnection):
            return None
        return PipelinedNodes(client, lambda host, port: _scripts(kwargs, host=host, port=port))
    if not isinstance(client, aioredis.Redis):
        return None
    pool = client.connection_pool
    kind, kwargs = pool.connection_class, pool.connection_kwargs
    if not _plain(kind, kwargs):
        return None
    if issubclass(kind, aioredis.UnixDomainSocketConnection):
        return _scripts(kwargs, path=kwargs.get("path"))
    return _scripts(kwargs, host=kwargs.get("host") or "localhost", port=int(kwargs.get("port", 6379)))


def _plain(kind: type[Any], kwargs: dict[str, Any]) -> bool:
    """Whether redis-py would connect with ``kind`` and ``kwargs`` as this module does: no TLS, no
    credential provider."""
    if issubclass(kind, aioredis.SSLConnection) or kwargs.get("credential_provider") is not None:
        return False
    return issubclass(kind, (aioredis.Connection, aioredis.UnixDomainSocketConnection))


def _scripts(kwargs: dict[str, Any], **address: Any) -> PipelinedScripts:
    return PipelinedScripts(
        **address,
        username=kwargs.get("username"),
        password=kwargs.get("password"),
        db=int(kwargs.get("db", 0) or 0),
        protocol=int(kwargs.get("protocol") or DEFAULT_RESP_VERSION),
        timeout=float(kwargs.get("socket_timeout") or 5.0),
        connect_timeout=float(kwargs.get("socket_connect_timeout") or 2.0),
    )
