"""Redis key names (see docs/store-contract.md).

Every key of one model carries the hash tag ``{<model>}``, so all keys a Lua script
touches live in one Redis Cluster slot. ``acog:models`` and ``acog:generations`` are the
only keys shared by all models; no script touches them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ids import validate_generation, validate_model_name

MODELS = "acog:models"
"""hash: model name -> JSON model record."""

GENERATIONS = "acog:generations"
"""hash: model name -> last generation ever issued (HINCRBY, never reset)."""


@dataclass(frozen=True, slots=True)
class GenerationKeys:
    """The keys of one model generation."""

    model: str
    generation: int

    def __post_init__(self) -> None:
        validate_model_name(self.model)
        validate_generation(self.generation)

    @property
    def prefix(self) -> str:
        return f"acog:{{{self.model}}}:{self.generation}"

    @property
    def log(self) -> str:
        """stream: the label log, self-contained events in apply order."""
        return f"{self.prefix}:log"

    @property
    def checkpoints(self) -> str:
        """list: checkpoint blobs, newest first."""
        return f"{self.prefix}:ckpt"

    @property
    def checkpoint_ids(self) -> str:
        """list: the applied stream id of each blob in :attr:`checkpoints`, same order."""
        return f"{self.prefix}:ckpt_ids"

    @property
    def pending_index(self) -> str:
        """zset: pending token -> expiry (unix ms), for counting and sweeping."""
        return f"{self.prefix}:pending_idx"

    def pending(self, token: str) -> str:
        """hash with a TTL: one pending prediction (pid, x, yhat, score, tp)."""
        return f"{self.prefix}:pending:{token}"

    def done(self, token: str) -> str:
        """string with a TTL: the stream id of the event already appended for that prediction id."""
        return f"{self.prefix}:done:{token}"

    def whole_generation(self) -> list[str]:
        """The keys :meth:`delete_generation` drops (pending and done keys expire on their own)."""
        return [self.log, self.checkpoints, self.checkpoint_ids, self.pending_index]
