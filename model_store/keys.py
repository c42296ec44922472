"""Redis key names (see docs/store-contract.md).

Two hash tags, so that every Lua script touches keys of one Redis Cluster slot only:

- ``{acog}``: the keys shared by all models (the set of model names, the control stream, the
  store's identity). They live on one shard.
- ``{<model>}``: everything of one model: its record (generation and configuration), its
  generation counter, and per generation the label log, its sequence counter, checkpoints,
  the checkpoint-writer lease, pending predictions and idempotency markers. Models spread
  over the shards by their names.

Because a model's record and its logs share a slot, the scripts that append labels check the
model's *current* generation atomically with the append: no label is acknowledged into a
generation that was replaced or deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ids import validate_generation, validate_model_name

GLOBAL_TAG = "{acog}"

MODEL_NAMES = f"acog:{GLOBAL_TAG}:models"
"""set: the names of every model (a name is added before its record is written, removed after
its record is deleted; a name without a record is ignored)."""

CONTROL = f"acog:{GLOBAL_TAG}:control"
"""stream: model life-cycle events (put, delete, checkpoint requests) that every replica follows."""

STORE_IDENTITY = f"acog:{GLOBAL_TAG}:identity"
"""hash: what this store is: ``epoch`` (random, written once when the store is first used) and
``layout`` (the key layout version). A Redis that comes back without it has lost its data."""

WRITE_PROBE_PREFIX = f"acog:{GLOBAL_TAG}:probe:"
"""The throw-away keys of the write probe (a 1 ms expiry each): never data, so never the remains
of lost data either."""

LEGACY_MODELS = "acog:models"
"""hash (layout 1): name -> JSON model record; read once by the layout migration."""

LEGACY_GENERATIONS = "acog:generations"
"""hash (layout 1): name -> last generation issued; read once by the layout migration."""


def retired_legacy_key(key: str) -> str:
    """The name a layout-1 key is kept under once the migration retires it: ``{<key>}:layout1``,
    whose hash tag puts it in the same Redis Cluster slot as ``key`` (which RENAME needs)."""
    return f"{{{key}}}:layout1"


LAYOUT = 2
"""The key layout this code writes: 2 adds per-model records, sequence numbers and leases."""


@dataclass(frozen=True, slots=True)
class ModelKeys:
    """The keys of one model that outlive its generations."""

    model: str

    def __post_init__(self) -> None:
        validate_model_name(self.model)

    @property
    def prefix(self) -> str:
        return f"acog:{{{self.model}}}"

    @property
    def record(self) -> str:
        """hash: ``generation``, ``config`` (JSON) and ``created_at`` of the current generation;
        absent once the model is deleted."""
        return f"{self.prefix}:model"

    @property
    def generation_counter(self) -> str:
        """string: the last generation ever issued (INCR, never reset, kept across deletes)."""
        return f"{self.prefix}:generations"

    @property
    def wait_fence(self) -> str:
        """string with a short TTL: written right before each ``WAIT``/``WAITAOF`` of a durable append
        (see :mod:`model_store.durability`), so that the wait covers every write the primary holds,
        a retried append's original one included."""
        return f"{self.prefix}:fence"

    def generation(self, generation: int) -> GenerationKeys:
        return GenerationKeys(self.model, generation)


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
    def record(self) -> str:
        """The model's record (see :attr:`ModelKeys.record`), which the append scripts check."""
        return ModelKeys(self.model).record

    @property
    def log(self) -> str:
        """stream: the label log, self-contained events in apply order, each with its sequence number."""
        return f"{self.prefix}:log"

    @property
    def sequence(self) -> str:
        """string: the sequence number of the newest log entry (INCR in the append scripts)."""
        return f"{self.prefix}:seq"

    @property
    def writer_lease(self) -> str:
        """string with a TTL: the replica that may write checkpoints of this generation."""
        return f"{self.prefix}:writer"

    @property
    def checkpoint_index(self) -> str:
        """list: one manifest per retained checkpoint, newest first:
        ``"<applied stream id> <token> <chunk count> <byte count> <sequence number> <state time ms>"``."""
        return f"{self.prefix}:ckpt_index"

    def checkpoint_chunks(self, token: str) -> str:
        """hash: the blob of checkpoint ``token``, fields ``"0"``, ``"1"``, ... its consecutive chunks.

        Written with a TTL while it is staged; the commit script removes the TTL (a chunk key
        without a TTL belongs to a committed checkpoint, one with a TTL to an uncommitted one).
        """
        return f"{self.prefix}:ckpt:{token}"

    @property
    def pending_index(self) -> str:
        """zset: pending token -> expiry (unix ms), for counting and sweeping."""
        return f"{self.prefix}:pending_idx"

    def pending(self, token: str) -> str:
        """hash with a TTL: one pending prediction (pid, x, yhat, score, tp)."""
        return f"{self.prefix}:pending:{token}"

    def done(self, token: str) -> str:
        """string with a TTL: ``"<stream id> <seq> <y> <tp> <tl>"`` of the event appended for that
        prediction id (the first label's outcome, which a retry answers again)."""
        return f"{self.prefix}:done:{token}"

    def whole_generation(self) -> list[str]:
        """The fixed-name keys :meth:`delete_generation` drops, besides the chunk keys the checkpoint
        index names (pending, done and staged chunk keys expire on their own)."""
        return [
            self.log,
            self.sequence,
            self.writer_lease,
            self.checkpoint_index,
            self.pending_index,
        ]
