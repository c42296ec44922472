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
    def checkpoint_index(self) -> str:
        """list: one manifest per retained checkpoint, newest first:
        ``"<applied stream id> <token> <chunk count> <byte count>"``."""
        return f"{self.prefix}:ckpt_index"

    def checkpoint_chunks(self, token: str) -> str:
        """hash: the blob of checkpoint ``token``, fields ``"0"``, ``"1"``, ... its consecutive chunks.

        Written with a TTL while it is staged; the commit script removes the TTL (a chunk key
        without a TTL belongs to a committed checkpoint, one with a TTL to an uncommitted one).
        """
        return f"{self.prefix}:ckpt:{token}"

    @property
    def legacy_checkpoints(self) -> str:
        """list (layout before chunked checkpoints): whole blobs, newest first; read, never written."""
        return f"{self.prefix}:ckpt"

    @property
    def legacy_checkpoint_ids(self) -> str:
        """list (layout before chunked checkpoints): the applied id of each legacy blob, same order."""
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
        """The fixed-name keys :meth:`delete_generation` drops, besides the chunk keys the checkpoint
        index names (pending, done and staged chunk keys expire on their own)."""
        return [
            self.log,
            self.checkpoint_index,
            self.legacy_checkpoints,
            self.legacy_checkpoint_ids,
            self.pending_index,
        ]
