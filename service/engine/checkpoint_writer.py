"""The checkpoint-writer lease of one model generation, and the checkpoints it writes.

One replica at a time (the lease holder) writes the generation's checkpoints: every N entries,
every T seconds, on request and at shutdown; when it dies its lease lapses and another replica
takes over. Encoding a checkpoint pauses the follower (the state must not move under it: the
replica's state lock is held); sending it to Redis does not. Any replica can be asked for a
checkpoint: it writes one itself when it holds (or can take) the lease, else asks the holder
through the control stream and waits for the stored index to show it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from model_store import NO_RETENTION, CheckpointStore, LogRetention, StoreError, StoreUnavailable

from .checkpoint import Snapshot
from .observer import Observer
from .runtime import ModelRuntime

log = logging.getLogger("acog.engine")


@dataclass(frozen=True, slots=True)
class WriterSettings:
    replica_id: str
    """Who this process is, for the lease (unique per process)."""
    checkpoint_every_events: int
    checkpoint_every_seconds: float
    checkpoints_kept: int
    lease_seconds: float
    """How long the lease lasts unless renewed (renewed every third of it)."""
    fault_delay_seconds: float = 0.0
    log_retention: LogRetention = NO_RETENTION
    """What each checkpoint write keeps of the log behind the oldest retained checkpoint."""


class CheckpointWriter:
    """See the module docstring. ``runtime`` gives the replica's current runtime (recovery may
    replace it); ``state`` is the lock held while the runtime changes."""

    def __init__(
        self,
        store: CheckpointStore,
        name: str,
        generation: int,
        settings: WriterSettings,
        observer: Observer,
        runtime: Callable[[], ModelRuntime],
        state: asyncio.Lock,
    ) -> None:
        self.store = store
        self.name = name
        self.generation = generation
        self.settings = settings
        self.observer = observer
        self.runtime = runtime
        self.state = state
        self.lease_holder = ""
        self.store_lost = False
        """Set when the store lost its data: no more lease or checkpoint writes."""
        self.upload: asyncio.Task[None] | None = None
        self.stored_seq = 0  # the newest committed checkpoint's sequence number, as last read
        self._waiters: list[tuple[int, asyncio.Future[bool]]] = []
        self._requested = False
        self._lease_due = 0.0

    @property
    def is_writer(self) -> bool:
        return self.lease_holder == self.settings.replica_id

    def request(self) -> None:
        """Another replica asked for a checkpoint (through the control stream)."""
        self._requested = True

    async def checkpoint(self, timeout: float) -> bool:
        """Have a checkpoint of at least the current version written; False when one is stored already.

        The lease holder writes it: this replica, if it holds the lease or can take it (then any
        store error is raised to the caller); else the holder, asked through the control stream,
        which this waits for up to ``timeout`` seconds.
        """
        target = self.runtime().version
        await self.refresh()
        if target <= self.stored_seq:
            return False
        await self._renew()
        if self.is_writer:
            if self.upload is not None and not self.upload.done():
                with contextlib.suppress(Exception):
                    await self.upload
            if self.runtime().version <= self.stored_seq:
                return False
            await self.write(*await self.encode())
            return True
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        await self.store.request_checkpoint(self.name, self.generation)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            raise StoreUnavailable(
                f"the checkpoint writer of {self.name} ({self.lease_holder}) wrote no checkpoint of version "
                f"{target} within {timeout:g} s",
                retry_after=5,
            ) from None

    async def housekeeping(self) -> None:
        """Keep the lease; as its holder, start writing a checkpoint when one is due (the follower
        calls this between reads, so nothing is applied while the state is encoded)."""
        if self.store_lost:
            return
        now = time.monotonic()
        if now >= self._lease_due or (self._waiters and not self.is_writer):
            await self._renew()
            self._lease_due = now + self.settings.lease_seconds / 3
            await self.refresh()
        if self.is_writer and (self.upload is None or self.upload.done()) and self._due():
            self._requested = False
            blob, snapshot = await self.encode()
            self.upload = asyncio.create_task(
                self._write_logged(blob, snapshot), name=f"checkpoint:{self.name}"
            )

    async def finish(self, checkpoint: bool) -> None:
        """At a stop: wait for an upload under way; with ``checkpoint``, the lease holder writes one
        of where the replica stopped (a clean shutdown); the lease is released."""
        if self.upload is not None:
            with contextlib.suppress(Exception):
                await self.upload
        if checkpoint and self.is_writer and self.runtime().version > self.stored_seq:
            try:
                await self.write(*await self.encode())
            except Exception as exc:
                log.warning(
                    "model %s: no checkpoint at shutdown (%s); the log replays on start", self.name, exc
                )
        if self.is_writer:
            with contextlib.suppress(StoreError):
                await self.store.release_lease(self.name, self.generation, self.settings.replica_id)
            self.lease_holder = ""

    def waiting(self) -> list[asyncio.Future[Any]]:
        """The requests waiting for a checkpoint, forgotten here (the caller fails them)."""
        waiting: list[asyncio.Future[Any]] = [future for _, future in self._waiters]
        self._waiters = []
        return waiting

    async def refresh(self) -> None:
        """Read the newest committed checkpoint's position (written by any replica)."""
        index = await self.store.checkpoint_index(self.name, self.generation)
        runtime = self.runtime()
        if index:
            newest = index[0]
            self.stored_seq = max(self.stored_seq, newest.seq or 0)
            if newest.written_at is not None:
                runtime.checkpointed_at = newest.written_at
            runtime.checkpointed_version = self.stored_seq
        self._resolve_waiters()

    async def encode(self) -> tuple[bytes, Snapshot]:
        # Nothing changes the runtime while the state lock is held, and the borrowed snapshot makes
        # sure of it (an update raises while its read-only views of the live arrays are out), so no
        # copy is made; encoding (memcpy and SHA-256, which release the GIL) runs in a thread:
        # predictions go on being served.
        async with self.state:
            with self.runtime().borrowed_snapshot() as snapshot:
                blob = await asyncio.to_thread(snapshot.encode)
        return blob, snapshot

    async def write(self, blob: bytes, snapshot: Snapshot) -> None:
        log.info("model %s: writing checkpoint at version %d", self.name, snapshot.version)
        if self.settings.fault_delay_seconds:
            await asyncio.sleep(self.settings.fault_delay_seconds)
        start = time.perf_counter()
        await self.store.write_checkpoint(
            self.name,
            self.generation,
            blob,
            snapshot.applied_id,
            snapshot.version,
            snapshot.written_at,
            self.settings.checkpoints_kept,
            self.settings.replica_id,
            self.settings.log_retention,
        )
        self.observer.checkpointed(self.name, time.perf_counter() - start, len(blob))
        self.stored_seq = max(self.stored_seq, snapshot.version)
        runtime = self.runtime()
        runtime.checkpointed_version = self.stored_seq
        runtime.checkpointed_at = snapshot.written_at
        log.info("model %s: checkpoint at version %d written", self.name, snapshot.version)
        self._resolve_waiters()

    async def _renew(self) -> None:
        self.lease_holder = await self.store.lease(
            self.name, self.generation, self.settings.replica_id, self.settings.lease_seconds
        )

    def _due(self) -> bool:
        runtime = self.runtime()
        if runtime.version <= self.stored_seq:
            self._requested = False
            return False
        if self._requested:
            return True
        if runtime.version - self.stored_seq >= self.settings.checkpoint_every_events:
            return True
        since = runtime.checkpointed_at if runtime.checkpointed_at is not None else runtime.created_at
        return time.time() - since >= self.settings.checkpoint_every_seconds

    def _resolve_waiters(self) -> None:
        keep = []
        for target, future in self._waiters:
            if self.stored_seq >= target:
                if not future.done():
                    future.set_result(True)
            else:
                keep.append((target, future))
        self._waiters = keep

    async def _write_logged(self, blob: bytes, snapshot: Snapshot) -> None:
        try:
            await self.write(blob, snapshot)
        except Exception as exc:  # retried when next due; a lost lease shows at the next renewal
            log.warning(
                "model %s: checkpoint at version %d not written: %s", self.name, snapshot.version, exc
            )
