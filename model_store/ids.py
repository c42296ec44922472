"""Model names, prediction ids and Redis stream ids: how they are spelled and parsed.

A prediction id is ``"{model}:{generation}:{ms:x}-{token}"``: the model name, its
generation, the prediction time in unix milliseconds (lower-case hex) and 16 random hex
chars. Clients treat it as opaque; the store reads it to route a label to its model
generation without a lookup, and to tell an *expired* id (older than the label window)
from an *unknown* one.
"""

from __future__ import annotations

import functools
import re
import secrets
from dataclasses import dataclass

MODEL_NAME_MAX_LENGTH = 64
_NAME = rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MODEL_NAME_MAX_LENGTH - 1}}}"
MODEL_NAME_REGEX = f"^{_NAME}$"
"""The one spelling of a model name: 1-64 chars of ``[A-Za-z0-9_.-]``, starting with a letter or digit
(the API's request schemas and path parameters use this string as their ``pattern``)."""
MODEL_NAME_PATTERN = re.compile(MODEL_NAME_REGEX)

_PREDICTION_ID = re.compile(
    f"^(?P<model>{_NAME})"
    r":(?P<generation>[1-9][0-9]{0,17})"
    r":(?P<ms>[0-9a-f]{1,16})-(?P<token>[0-9a-f]{16})$"
)
_STREAM_ID = re.compile(r"^([0-9]{1,20})-([0-9]{1,20})$")


class InvalidModelName(ValueError):
    """A model name that does not match :data:`MODEL_NAME_PATTERN`."""


class PredictionIdError(ValueError):
    """A string that is not a well-formed prediction id."""


@dataclass(frozen=True, slots=True)
class PredictionId:
    """The parts of a prediction id; ``str(pid)`` spells it back exactly."""

    model: str
    generation: int
    ms: int
    token: str

    @property
    def predicted_at(self) -> float:
        """The prediction time embedded in the id, in unix seconds (millisecond resolution)."""
        return self.ms / 1000.0

    def __str__(self) -> str:
        return f"{self.model}:{self.generation}:{self.ms:x}-{self.token}"


def validate_model_name(name: str) -> str:
    """Return ``name`` unchanged if it is a valid model name, else raise :class:`InvalidModelName`."""
    if not isinstance(name, str) or MODEL_NAME_PATTERN.fullmatch(name) is None:
        raise InvalidModelName(
            f"invalid model name {name!r}: 1-64 chars of [A-Za-z0-9_.-], starting with a letter or digit"
        )
    return name


def validate_generation(generation: int) -> int:
    """Return ``generation`` if it is an int >= 1, else raise ``ValueError``."""
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 1:
        raise ValueError(f"a model generation is an int >= 1, got {generation!r}")
    return generation


def make_prediction_id(model: str, generation: int, predicted_at: float, token: str | None = None) -> str:
    """A new prediction id for a prediction made at ``predicted_at`` (unix seconds).

    ``token`` defaults to 16 fresh random hex chars; pass one only to rebuild a known id.
    """
    prefix = _id_prefix(model, generation) if type(model) is str and type(generation) is int else None
    if prefix is None:  # not a str and an int: refused by the checks
        validate_model_name(model)
        validate_generation(generation)
        prefix = f"{model}:{generation}:"
    if token is None:
        token = secrets.token_hex(8)
    elif len(token) != 16 or token.strip("0123456789abcdef"):
        raise PredictionIdError(f"a prediction id token is 16 lower-case hex chars, got {token!r}")
    ms = int(predicted_at * 1000)
    if ms < 0:
        raise ValueError(f"prediction time must be after the unix epoch, got {predicted_at!r}")
    return f"{prefix}{ms:x}-{token}"


@functools.lru_cache(maxsize=4096, typed=True)
def _id_prefix(model: str, generation: int) -> str:
    """``"{model}:{generation}:"``, checked once per model generation (not once per prediction)."""
    validate_model_name(model)
    validate_generation(generation)
    return f"{model}:{generation}:"


_ID_TAIL = re.compile(r"(?P<ms>[0-9a-f]{1,16})-(?P<token>[0-9a-f]{16})")


def token_and_ms(prediction_id: str, model: str, generation: int) -> tuple[str, int]:
    """The token and milliseconds of a prediction id of ``model`` generation ``generation``, or
    ``ValueError`` when it is not one (the same ids :func:`parse_prediction_id` accepts, read
    from the end once the prefix is known)."""
    prefix = _id_prefix(model, generation)
    match = _ID_TAIL.fullmatch(prediction_id, len(prefix)) if prediction_id.startswith(prefix) else None
    if match is None:
        raise ValueError(f"prediction id {prediction_id} is not of {model} generation {generation}")
    return match["token"], int(match["ms"], 16)


def parse_prediction_id(prediction_id: str) -> PredictionId:
    """Split a prediction id into its parts, or raise :class:`PredictionIdError`."""
    match = _PREDICTION_ID.fullmatch(prediction_id) if isinstance(prediction_id, str) else None
    if match is None:
        raise PredictionIdError(f"malformed prediction id {prediction_id!r}")
    return PredictionId(
        model=match["model"],
        generation=int(match["generation"]),
        ms=int(match["ms"], 16),
        token=match["token"],
    )


def parse_stream_id(stream_id: str) -> tuple[int, int]:
    """``"<ms>-<seq>"`` as ``(ms, seq)``, which sorts like the stream does; ``ValueError`` if malformed."""
    match = _STREAM_ID.fullmatch(stream_id) if isinstance(stream_id, str) else None
    if match is None:
        raise ValueError(f"malformed stream id {stream_id!r}")
    return int(match[1]), int(match[2])
