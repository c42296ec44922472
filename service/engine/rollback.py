"""Rollback: a model's retained checkpoints, and a new generation restored from one of them.

``checkpoints(name)`` lists the current generation's retained checkpoints (``ACOG_CHECKPOINTS_KEPT``
of them, newest first): the log position (``version``) each holds the state at, and when.

``rollback(name, version)`` starts generation ``g + 1`` whose state is, bit for bit, the checkpoint
of generation ``g`` at ``version``: learner, measures (running and windowed), feature registry,
schema history and drift detector, with its log position set to 0 (a new generation's log starts
empty). The store writes the new record and that first checkpoint in one script
(``put_model_from_state``), so every replica, and any process started later, loads exactly that
state; a process killed before the script leaves the model as it was (only staged chunks, which
expire), and one killed after it leaves the rollback done.

**The labels after the checkpoint are forgotten**, not replayed: they stay in generation ``g``'s
log, which is dropped with the generation, like a replacement's. A rollback is the decision that
what the model learned since that checkpoint was wrong (a bad batch of labels, a poisoned
stream, a drift since undone); replaying those labels would bring it back. Predictions made by
generation ``g`` can no longer be labelled (410, as after a replacement); the model's version
restarts at 0 while its measures carry on from the checkpoint.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from model_store import GenerationGone, ModelRecord, ModelStore, StoreError

from .checkpoint import Snapshot
from .errors import InvalidRequest, ModelConflict
from .replica import ModelReplica


@dataclass(frozen=True, slots=True)
class RetainedCheckpoint:
    """One retained checkpoint of a model's current generation."""

    generation: int
    version: int
    """The log position whose state it holds (labels and schema changes applied)."""
    applied_id: str
    written_at: float | None


class Rollbacks:
    """List a model's checkpoints, and roll it back to one; see the module docstring."""

    def __init__(
        self,
        store: ModelStore,
        serving: Callable[[str], ModelReplica],
        install: Callable[[ModelRecord], Awaitable[None]],
    ) -> None:
        self.store = store
        self.serving = serving
        """The replica of a model that serves here (else the engine's error: unknown, unavailable)."""
        self.install = install
        """Serve a model record's generation here, replacing the one held."""

    async def checkpoints(self, name: str) -> list[RetainedCheckpoint]:
        """The current generation's retained checkpoints, newest first."""
        replica = self.serving(name)
        index = await self.store.checkpoint_index(name, replica.generation)
        return [RetainedCheckpoint(replica.generation, m.seq or 0, m.applied_id, m.written_at) for m in index]

    async def rollback(self, name: str, version: int) -> ModelRecord:
        """Start a new generation of ``name`` from its checkpoint at ``version``."""
        replica = self.serving(name)
        generation = replica.generation
        record = await self.store.load_model(name)
        if record is None or record.generation != generation:
            raise ModelConflict("model", f"model {name!r} was changed meanwhile by another request")
        blob = None
        async for checkpoint in self.store.iter_checkpoints(name, generation):
            if checkpoint.seq == version:
                blob = checkpoint.blob
                break
        if blob is None:
            kept = [c.version for c in await self.checkpoints(name)]
            raise InvalidRequest(
                "version",
                f"generation {generation} of model {name!r} has no retained checkpoint at version "
                f"{version}; it has {kept} (GET /models/{name}/checkpoints)",
            )
        try:
            snapshot = Snapshot.decode(blob, generation, replica.runtime.config_json)
        except Exception as exc:  # a damaged blob: the codec's error, or a mismatch
            raise InvalidRequest(
                "version", f"the checkpoint at version {version} cannot be read: {exc}"
            ) from None
        now = time.time()
        seed = dataclasses.replace(
            snapshot, generation=generation + 1, applied_id="0-0", version=0, written_at=now
        )
        try:
            new = await self.store.put_model_from_state(
                name, record.config, now, generation, seed.encode(), now
            )
        except GenerationGone:
            raise ModelConflict("model", f"model {name!r} was changed meanwhile by another request") from None
        await self.install(new)
        with contextlib.suppress(StoreError):
            await self.store.delete_generation(name, generation)
        return new
