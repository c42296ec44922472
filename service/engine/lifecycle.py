"""The engine's life: start (open the store, recover every model from its checkpoint and the log
after it, then follow), stop, and maintenance while it runs.

Opening the store checks its identity: a store that lost its data (a Redis restarted empty, or
flushed) is refused at start, and, when it is lost while the engine runs, refused from then on
rather than served into. Maintenance counts and sweeps pending predictions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time

from model_store import IdentityStore, ModelStore, StoreError, StoreIdentity, StoreUnavailable

from ..model_config import ModelConfig
from ..settings import Settings
from .cancellation import finish, reraise_cancellation
from .changes import ModelChanges
from .errors import ModelUnavailable
from .observer import Observer
from .registry import Registry
from .replica import ModelReplica, Status

log = logging.getLogger("acog.engine")


def replica_id() -> str:
    """A name for this process that no other process has: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Lifecycle:
    """Start, stop and maintenance of the engine; see the module docstring."""

    def __init__(
        self,
        store: ModelStore,
        settings: Settings,
        observer: Observer,
        registry: Registry,
        changes: ModelChanges,
    ) -> None:
        self.store = store
        self.settings = settings
        self.observer = observer
        self.registry = registry
        self.changes = changes
        self.ready = False
        self.identity: StoreIdentity | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.stopping = False

    async def start(self) -> None:
        """Check the store, recover every model, create the default one if needed, then follow."""
        registry = self.registry
        await self._open_store()
        position = await self.store.control_position()
        records = await self.store.load_models()
        default = self.settings.default_model
        await registry.warm_up([r.config for r in records] + ([dict(default)] if default else []))
        for record in records:
            await registry.install(record)
        if default is not None:
            spec = dict(default)
            name = str(spec.pop("name", "default"))
            if name not in registry.replicas and name not in registry.failed:
                await self.changes.put_model(name, ModelConfig.model_validate(spec))
        self.tasks = [
            asyncio.create_task(registry.follow_control(position, lambda: self.stopping), name="control"),
            asyncio.create_task(self._maintain(), name="maintenance"),
        ]
        self.ready = True

    async def stop(self) -> None:
        """Stop following; the lease holders checkpoint their models (a clean shutdown)."""
        self.ready = False
        self.stopping = True
        control, maintenance = self.tasks or (None, None)
        shutting_down = ModelUnavailable("model", "the service is shutting down")

        async def stop(replica: ModelReplica) -> None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(  # nothing is written into a store that lost its data
                    replica.stop(shutting_down, checkpoint=self.registry.store_lost is None), timeout=20
                )

        await asyncio.gather(
            finish(control, 3.0),
            finish(maintenance, 1.0, cancel_first=True),
            *(stop(replica) for replica in list(self.registry.replicas.values())),
        )

    async def _open_store(self) -> None:
        """The store's identity (written the first time); layout-1 models are migrated first."""
        await self.store.check_durability()
        identity = await check_store_identity(self.store, self.settings.store_epoch)
        if identity is None:
            await self._migrate_layout_1()
            identity = await self.store.identity(create=True)
        assert identity is not None
        log.info("store epoch %s (key layout %d)", identity.epoch, identity.layout)
        if identity.layout > 2:
            raise StoreError(
                f"the store has key layout {identity.layout}, written by a newer acog-service; "
                "this version reads layout 2"
            )
        self.identity = identity

    async def _migrate_layout_1(self) -> None:
        """Models of layout 1 get their own records; each log's sequence counter starts where its
        recovered state is (so no label is numbered twice)."""
        for record, last_generation in await self.store.legacy_models():
            replica = self.registry.new_replica(record)
            if replica is None:
                continue
            await replica.start()
            if replica.status is Status.SERVING:
                await self.store.adopt_model(record, last_generation, replica.runtime.version)
            await replica.stop(ModelUnavailable("model", "migrated"))
        await self.store.finish_layout_migration()

    # --- maintenance ----------------------------------------------------------------------

    async def _maintain(self) -> None:
        while True:
            await asyncio.sleep(self.settings.maintenance_interval_seconds)
            try:
                await self.maintain_once()
            except StoreUnavailable as exc:
                reraise_cancellation()
                log.warning("maintenance skipped: %s", exc)
            except Exception:
                reraise_cancellation()
                log.exception("maintenance failed")

    async def maintain_once(self) -> None:
        await self.check_identity()
        now = time.time()
        for name, replica in list(self.registry.replicas.items()):
            expired = await self.store.sweep_expired(name, replica.generation, now)
            if expired:
                self.observer.expired(name, expired)
            replica.pending_count = await self.store.count_pending(name, replica.generation, now)

    async def check_identity(self) -> None:
        """Refuse to go on with a store that is not the one this engine started on (a Redis that
        restarted empty, or was flushed): its models and logs are gone."""
        identity = await self.store.identity(create=False)
        if self.identity is not None and identity != self.identity:
            found = "no identity at all" if identity is None else f"epoch {identity.epoch}"
            self.registry.store_lost = (
                f"the store lost its data: it was epoch {self.identity.epoch} when this process started "
                f"and now has {found} (a Redis restarted without persistence, or flushed). Nothing is "
                "served into it; restore its data, or restart the service to start afresh"
            )
            log.critical("%s", self.registry.store_lost)
            for replica in self.registry.replicas.values():
                replica.writer.store_lost = True


async def check_store_identity(store: IdentityStore, expected_epoch: str | None) -> StoreIdentity | None:
    """The store's identity (None: a new store, or one of layout 1 to migrate), or a
    :class:`StoreError` for a store that lost its data: another epoch or none where
    ``expected_epoch`` (``ACOG_STORE_EPOCH``) is set, or no identity but ``acog:*`` keys left."""
    identity = await store.identity(create=False)
    if expected_epoch is not None and (identity is None or identity.epoch != expected_epoch):
        found = "no epoch at all" if identity is None else f"epoch {identity.epoch}"
        raise StoreError(
            f"the store is not the one this service expects: ACOG_STORE_EPOCH is {expected_epoch} and "
            f"the store has {found}. It lost its data (a Redis restarted without persistence, or "
            "flushed) or it is another store; restore its data, or unset ACOG_STORE_EPOCH to start afresh"
        )
    if identity is None and not await store.legacy_models():
        leftover = await store.leftover_key()
        if leftover is not None:
            # A replica starting beside this one may have created the identity between the two
            # reads (the leftover is then the identity itself): read it once more before refusing.
            identity = await store.identity(create=False)
        if leftover is not None and identity is None:
            raise StoreError(
                f"the store lost part of its data: it has no identity but still holds {leftover!r} (keys "
                "evicted under maxmemory, or a partial restore). Restore its data, or delete the acog:* "
                "keys to start afresh"
            )
    return identity
