"""Persistence for acog-service: every byte that leaves the process lives here.

Checkpoint state is encoded with :func:`encode_state` / :func:`decode_state`.
Nothing here imports ``service``.
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
from .examples import Example, ExampleDecodeError, decode_example, encode_example
from .ids import (
    InvalidModelName,
    PredictionId,
    PredictionIdError,
    make_prediction_id,
    parse_prediction_id,
    parse_stream_id,
    validate_model_name,
)

__all__ = [
    "SCHEMA_VERSION",
    "CodecError",
    "CorruptBlob",
    "Example",
    "ExampleDecodeError",
    "InvalidModelName",
    "PredictionId",
    "PredictionIdError",
    "UnencodableValue",
    "UnsupportedVersion",
    "decode_example",
    "decode_state",
    "encode_example",
    "encode_state",
    "make_prediction_id",
    "parse_prediction_id",
    "parse_stream_id",
    "validate_model_name",
]
