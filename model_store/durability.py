"""Opt-in stricter durability for appends: ``WAIT`` and ``WAITAOF``.

Redis acknowledges a write once it is in the primary's memory. Whether an acknowledged label
survives a crash then depends on the server: ``appendfsync always`` (every write fsynced before
the reply) or ``everysec`` (up to a second of writes lost if the machine crashes), and, with
replicas, on asynchronous replication (a failover loses what the replica had not received yet).

With :class:`Durability` set, every append (``label``, ``append_examples``, ``append_event``) is
followed on the same connection by

- ``WAIT replicas timeout``: block until ``replicas`` replicas have the write; or
- ``WAITAOF local replicas timeout`` (Redis 7.2 and later): block until the write is fsynced to
  the primary's append-only file (``local`` = 1) and to those of ``replicas`` replicas;

and the append is acknowledged only if the count was reached in time. Otherwise the store raises
:class:`~model_store.protocol.StoreUnavailable`: the entry *is* in the log (a retry answers its
outcome), but it was not confirmed as durable as asked.

``WAIT`` counts the replicas that acknowledged the *connection's* last write. So the append script,
a write of a fence key in the model's slot (``SET ... PX``, which the primary replicates like any
write) and the wait go out together, pipelined on one connection to the primary that holds the
model's slot, in one round trip. The fence makes the wait cover everything that primary holds: a
retried label answered as a duplicate writes nothing itself, and without the fence its wait would
measure an older write of that connection, not the first try's entry.

With **Redis Cluster** that connection goes to the primary that owns the model's hash slot, as
redis-py's cluster client maps it (``get_node_from_key``), through a plain client of that node: the
wait then counts that shard's replicas. If the slot has moved (a failover, a resharding), that node
answers MOVED or not at all: the append is refused (503), the cluster client is made to refresh its
map, and the retry goes to the new owner. The first try's entry either reached the new primary
(the retry answers it, and its wait confirms it there) or it did not (the retry appends it): the
label counts once either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Durability:
    replicas: int = 0
    """Replicas that must have each append (``WAIT``, or ``WAITAOF``'s second count)."""
    aof_local: bool = False
    """The primary must have fsynced each append to its append-only file (``WAITAOF``)."""
    timeout_seconds: float = 1.0
    """How long an append waits for them before it is reported unconfirmed (503)."""

    @property
    def active(self) -> bool:
        return self.replicas > 0 or self.aof_local

    @property
    def needs_waitaof(self) -> bool:
        return self.aof_local

    fence_ttl_ms: int = 10_000
    """How long a fence key written before each wait lives (it only needs to outlive the wait)."""

    def command(self) -> tuple[Any, ...]:
        timeout_ms = max(1, round(self.timeout_seconds * 1000))
        if self.aof_local:
            return ("WAITAOF", 1, self.replicas, timeout_ms)
        return ("WAIT", self.replicas, timeout_ms)

    def shortfall(self, reply: Any) -> str | None:
        """What the wait's reply lacks, or None when the append is as durable as asked."""
        if self.aof_local:
            local, replicas = (int(v) for v in reply)
            if local < 1:
                return "not fsynced to the primary's append-only file"
            if replicas < self.replicas:
                return f"fsynced by {replicas} of {self.replicas} replicas"
            return None
        if int(reply) < self.replicas:
            return f"received by {int(reply)} of {self.replicas} replicas"
        return None
