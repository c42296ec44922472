"""A model's checkpoint: everything needed to carry on exactly where it stopped.

The blob is :func:`model_store.encode_state` of::

    {"format": 1, "generation": int, "config": JSON text, "applied_id": str,
     "version": int, "updates": int, "written_at": float,
     "learner": learner.to_state(), "measures": ..., "window": ..., "registry": {"names": [...]},
     "schema": SchemaHistory.to_state() after a declared schema change, else None,
     "drift": the drift detector's state (service.drift.PageHinkley.to_state); absent in
              checkpoints written before it existed, whose models start the detector afresh,
     "challengers": {id: service.challengers.Challenger.to_state()} or None}

``config`` is stored so that a blob written for another configuration is never loaded into
a model (``restore`` checks it). Decoding errors (checksum, truncation, future format) are
the codec's; the engine then falls back to the previous checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model_store import decode_state, encode_state

FORMAT = 1


class CheckpointMismatch(ValueError):
    """A well-formed checkpoint that belongs to another configuration or generation."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    generation: int
    config_json: str
    applied_id: str
    version: int
    updates: int
    written_at: float
    learner: dict[str, Any]
    measures: dict[str, Any]
    window: dict[str, Any]
    registry: dict[str, Any] | None
    schema: dict[str, Any] | None = None
    """:meth:`service.schema_history.SchemaHistory.to_state` once the schema changed (the learner
    state is then of the *current* schema's learner)."""
    drift: dict[str, Any] | None = None
    """:meth:`service.drift.DriftMonitor.to_state` (None: a checkpoint older than the detector)."""
    challengers: dict[str, Any] | None = None
    """Each challenger's :meth:`service.challengers.Challenger.to_state`, by id (None: none)."""

    def encode(self) -> bytes:
        return encode_state(
            {
                "format": FORMAT,
                "generation": self.generation,
                "config": self.config_json,
                "applied_id": self.applied_id,
                "version": self.version,
                "updates": self.updates,
                "written_at": self.written_at,
                "learner": self.learner,
                "measures": self.measures,
                "window": self.window,
                "registry": self.registry,
                "schema": self.schema,
                "drift": self.drift,
                "challengers": self.challengers,
            }
        )

    @classmethod
    def decode(cls, blob: bytes, generation: int, config_json: str) -> Snapshot:
        tree = decode_state(blob)
        if tree.get("format") != FORMAT:
            raise CheckpointMismatch(f"checkpoint format {tree.get('format')!r}, expected {FORMAT}")
        if tree.get("generation") != generation or tree.get("config") != config_json:
            raise CheckpointMismatch("checkpoint was written for another generation or configuration")
        return cls(
            generation=tree["generation"],
            config_json=tree["config"],
            applied_id=tree["applied_id"],
            version=tree["version"],
            updates=tree["updates"],
            written_at=tree["written_at"],
            learner=tree["learner"],
            measures=tree["measures"],
            window=tree["window"],
            registry=tree["registry"],
            schema=tree.get("schema"),
            drift=tree.get("drift"),
            challengers=tree.get("challengers"),
        )
