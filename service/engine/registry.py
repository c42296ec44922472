"""The models this process holds: one :class:`~service.engine.replica.ModelReplica` per model, kept
in step with the store's model records.

Create, replace and delete go through the store, which announces them on the control stream;
:meth:`Registry.follow_control` applies those events as they come (and reconciles with the records
now and then), so a change made on one replica reaches all of them within a second. Installing a
model (which may compile kernels) happens only here, on start-up, on a model change this process
made, or on the control path, never on a request's path: a request that meets a model this process
does not hold yet asks for it with :meth:`Registry.request_refresh` and is answered at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from model_store import ControlEvent, LogRetention, ModelRecord, ModelStore

from ..learners import warm_up
from ..model_config import ModelConfig
from ..settings import Settings
from .cancellation import reraise_cancellation
from .errors import ModelGone, ModelUnavailable, StoreLost, UnknownModel
from .observer import Observer
from .replica import ModelReplica, ReplicaSettings
from .view import FailedModel, ModelView

log = logging.getLogger("acog.engine")

RECONCILE_SECONDS = 30.0
"""How often every replica compares its models with the stored records (a safety net under the
control stream)."""

FOLLOW_BLOCK_SECONDS = 1.0
"""How long one read of the control stream waits for an event (and so how long a refresh a
request asked for waits at most before the follower takes it up)."""


def replica_settings(replica_id: str, settings: Settings) -> ReplicaSettings:
    """What every model replica of this process is run with."""
    return ReplicaSettings(
        replica_id=replica_id,
        label_window_seconds=settings.label_ttl_seconds,
        done_ttl_seconds=settings.done_ttl_seconds,
        checkpoint_every_events=settings.checkpoint_every_events,
        checkpoint_every_seconds=settings.checkpoint_every_seconds,
        checkpoints_kept=settings.checkpoints_kept,
        lease_seconds=settings.checkpoint_lease_seconds,
        follow_block_seconds=min(1.0, settings.redis_timeout_seconds / 2),
        apply_timeout_seconds=2 * settings.redis_timeout_seconds,
        max_pending=settings.max_pending_per_model,
        memory_budget=settings.memory_budget_bytes,
        metrics_window=settings.metrics_window,
        fault_delay_seconds=settings.fault_checkpoint_delay_seconds,
        log_retention=LogRetention(settings.log_retain_entries, settings.log_retain_seconds),
    )


class Registry:
    """Every model of this process, serving (:attr:`replicas`) or not loadable (:attr:`failed`)."""

    def __init__(
        self, store: ModelStore, settings: Settings, observer: Observer, replica_settings: ReplicaSettings
    ) -> None:
        self.store = store
        self.settings = settings
        self.observer = observer
        self.replica_settings = replica_settings
        self.replicas: dict[str, ModelReplica] = {}
        self.failed: dict[str, FailedModel] = {}
        self.store_lost: str | None = None
        """Why the store is refused (it lost its data), or None; set by the identity check."""
        self._lock = asyncio.Lock()  # installing and removing models
        self._wanted: set[str] = set()  # models a request asked to refresh

    # --- installing and removing ----------------------------------------------------------

    async def warm_up(self, configs: Sequence[dict[str, Any]]) -> None:
        """Compile, or load from the kernel cache, every kernel these models need, before they serve:
        a request never waits for numba (a cold compile takes tens of seconds)."""
        targets = []
        for raw in configs:
            spec = {k: v for k, v in raw.items() if k != "name"}
            try:
                config = ModelConfig.model_validate(spec)
            except ValueError:
                continue  # refused later, where the model is loaded or created
            targets.append(config.learner_name(self.settings.memory_budget_bytes))
            targets.extend(config.member_algorithms())  # the ensemble's families: quadratic, forest
        if not targets:
            return
        done = await asyncio.to_thread(warm_up, targets)
        if done.compiled:
            log.info(
                "compiled %d kernel specialisations for %s in %.1f s (loaded %d from the cache)",
                len(done.compiled),
                ", ".join(done.algorithms),
                done.seconds,
                len(done.loaded),
            )

    def new_replica(self, record: ModelRecord) -> ModelReplica | None:
        """A replica of ``record`` (not started), or None when its configuration cannot be loaded
        (the model is then held as failed)."""
        try:
            config = ModelConfig.model_validate(record.config)
            return ModelReplica(
                record.name, record.generation, config, self.store, self.replica_settings, self.observer
            )
        except Exception as exc:
            reason = f"stored configuration cannot be loaded: {exc}"
            self.failed[record.name] = FailedModel(record.name, record.generation, reason)
            log.error("model %s: %s", record.name, reason)
            return None

    async def install(self, record: ModelRecord) -> None:
        """Serve ``record``'s generation here, replacing an older one (no-op if as new or newer)."""
        async with self._lock:
            current = self.replicas.get(record.name)
            failed = self.failed.get(record.name)
            known = current.generation if current else (failed.generation if failed else 0)
            if known >= record.generation:
                return
            self.failed.pop(record.name, None)
            replica = self.new_replica(record)
            if replica is not None:
                await self.warm_up([record.config])
                await replica.start()
                self.replicas[record.name] = replica
            else:
                self.replicas.pop(record.name, None)
            if current is not None:
                await current.stop(ModelGone("model", f"model {record.name!r} was replaced meanwhile"))
            self.observer.model_added(record.name)

    async def remove(self, name: str, generation: int | None) -> None:
        """Stop serving ``name`` here (deleted), if this replica's generation is not newer."""
        async with self._lock:
            current = self.replicas.get(name)
            if current is not None and (generation is None or current.generation <= generation):
                del self.replicas[name]
                await current.stop(ModelGone("model", f"model {name!r} was deleted meanwhile"))
                self.observer.model_removed(name)
            failed = self.failed.get(name)
            if failed is not None and (generation is None or failed.generation <= generation):
                del self.failed[name]

    async def refresh_model(self, name: str) -> None:
        """Bring ``name`` on this replica up to its stored record (install, replace or remove)."""
        record = await self.store.load_model(name)
        if record is None:
            await self.remove(name, None)
        else:
            await self.install(record)

    async def reconcile(self) -> None:
        """Compare every model here with the stored records, and fix what differs."""
        records = {r.name: r for r in await self.store.load_models()}
        for record in records.values():
            await self.install(record)
        for name in [n for n in [*self.replicas, *self.failed] if n not in records]:
            await self.remove(name, None)

    def request_refresh(self, name: str) -> None:
        """Have the control follower bring ``name`` up to its stored record (within
        :data:`FOLLOW_BLOCK_SECONDS`): the request that asks does not wait for it."""
        self._wanted.add(name)

    # --- the control stream ---------------------------------------------------------------

    async def follow_control(self, position: str, stopping: Callable[[], bool]) -> None:
        """Apply life-cycle events as they come, and the refreshes requests asked for; reconcile
        with the records now and then."""
        reconcile_at = time.monotonic() + RECONCILE_SECONDS
        backoff = 0.05
        while not stopping():
            try:
                for event in await self.store.follow_control(position, FOLLOW_BLOCK_SECONDS):
                    position = event.event_id
                    await self.on_control(event)
                while self._wanted:
                    await self.refresh_model(self._wanted.pop())
                if time.monotonic() >= reconcile_at:
                    await self.reconcile()
                    reconcile_at = time.monotonic() + RECONCILE_SECONDS
                backoff = 0.05
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                reraise_cancellation()
                log.warning("following model changes failed (%s); retrying", exc)
                await asyncio.sleep(backoff)
                backoff = min(2.0, backoff * 2)

    async def on_control(self, event: ControlEvent) -> None:
        if event.op == "put":
            await self.refresh_model(event.model)
        elif event.op == "delete":
            await self.remove(event.model, event.generation)
        else:
            replica = self.replicas.get(event.model)
            if replica is not None and replica.generation == event.generation:
                replica.request_checkpoint()

    # --- reading --------------------------------------------------------------------------

    def view(self, name: str, detail: bool = False) -> ModelView:
        """The read-only view of model ``name`` (``detail``: with its described state), or
        :class:`UnknownModel`."""
        replica = self.replicas.get(name)
        if replica is not None:
            return ModelView.of(replica, detail)
        failed = self.failed.get(name)
        if failed is not None:
            return ModelView.of_failed(failed)
        raise UnknownModel("name", f"no model named {name!r}")

    def views(self) -> list[ModelView]:
        """Every model on this replica, sorted by name."""
        return [self.view(name) for name in sorted({*self.replicas, *self.failed})]

    def check_store(self) -> None:
        """Refuse to serve from a store that lost its data (:class:`StoreLost`)."""
        if self.store_lost is not None:
            raise StoreLost("store", self.store_lost)

    def serving(self, name: str) -> ModelReplica:
        """The replica of ``name`` that can serve now, or the reason it cannot."""
        self.check_store()
        failed = self.failed.get(name)
        if failed is not None:
            raise ModelUnavailable("model", f"model {name!r} cannot serve: {failed.reason}")
        replica = self.replicas.get(name)
        if replica is None:
            raise UnknownModel("model", f"no model named {name!r}")
        replica.check_serving()
        return replica
