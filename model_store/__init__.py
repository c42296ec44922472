"""Persistence for acog-service: every byte that leaves the process lives here.

The engine depends on :class:`ModelStore` (see ``docs/store-contract.md``), gets one from
:func:`open_store`, and encodes checkpoint state with :func:`encode_state` /
:func:`decode_state`. Nothing here imports ``service``.
"""

from .codec import (
    SCHEMA_VERSION,
    CodecError,
    CorruptBlob,
    UnencodableValue,
    UnsupportedVersion,
    decode_state,
    encode_state,
)
from .connection import ConnectionSettings
from .durability import Durability
from .embedded import EmbeddedRedis
from .examples import Example, ExampleDecodeError, decode_example, encode_example
from .ids import (
    MODEL_NAME_MAX_LENGTH,
    MODEL_NAME_REGEX,
    InvalidModelName,
    PredictionId,
    PredictionIdError,
    make_prediction_id,
    parse_prediction_id,
    parse_stream_id,
    validate_model_name,
)
from .memory import MemoryModelStore
from .protocol import (
    NO_RETENTION,
    Appended,
    AppendResult,
    Checkpoint,
    CheckpointStore,
    ControlEvent,
    GenerationGone,
    IdentityStore,
    LabelLog,
    LabelOutcome,
    LabelStatus,
    LogEntry,
    LogMoved,
    LogRetention,
    Manifest,
    ModelRecord,
    ModelRegistry,
    ModelStore,
    PendingLimitExceeded,
    PendingPrediction,
    PendingStore,
    ReplicaStore,
    StoreError,
    StoreHealth,
    StoreIdentity,
    StoreUnavailable,
)
from .redis_store import RedisModelStore
from .startup import open_store

__all__ = [
    "MODEL_NAME_MAX_LENGTH",
    "MODEL_NAME_REGEX",
    "NO_RETENTION",
    "SCHEMA_VERSION",
    "AppendResult",
    "Appended",
    "Checkpoint",
    "CheckpointStore",
    "CodecError",
    "ConnectionSettings",
    "ControlEvent",
    "CorruptBlob",
    "Durability",
    "EmbeddedRedis",
    "Example",
    "ExampleDecodeError",
    "GenerationGone",
    "IdentityStore",
    "InvalidModelName",
    "LabelLog",
    "LabelOutcome",
    "LabelStatus",
    "LogEntry",
    "LogMoved",
    "LogRetention",
    "Manifest",
    "MemoryModelStore",
    "ModelRecord",
    "ModelRegistry",
    "ModelStore",
    "PendingLimitExceeded",
    "PendingPrediction",
    "PendingStore",
    "PredictionId",
    "PredictionIdError",
    "RedisModelStore",
    "ReplicaStore",
    "StoreError",
    "StoreHealth",
    "StoreIdentity",
    "StoreUnavailable",
    "UnencodableValue",
    "UnsupportedVersion",
    "decode_example",
    "decode_state",
    "encode_example",
    "encode_state",
    "make_prediction_id",
    "open_store",
    "parse_prediction_id",
    "parse_stream_id",
    "validate_model_name",
]
