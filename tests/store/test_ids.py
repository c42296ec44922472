"""Prediction ids, model names and stream ids."""

from __future__ import annotations

import pytest

from model_store import (
    InvalidModelName,
    PredictionIdError,
    make_prediction_id,
    parse_prediction_id,
    parse_stream_id,
    validate_model_name,
)


@pytest.mark.parametrize("name", ["a", "A9", "fraud.v2_eu-west", "9" * 64])
def test_valid_model_names(name: str) -> None:
    assert validate_model_name(name) == name


@pytest.mark.parametrize("name", ["", "_a", ".a", "-a", "a:b", "a{b}", "a b", "é", "a" * 65])
def test_invalid_model_names(name: str) -> None:
    with pytest.raises(InvalidModelName):
        validate_model_name(name)


def test_prediction_id_round_trip() -> None:
    pid = make_prediction_id("fraud.v2", 7, 1_700_000_000.1234)
    parsed = parse_prediction_id(pid)
    assert (parsed.model, parsed.generation, parsed.ms) == ("fraud.v2", 7, 1_700_000_000_123)
    assert parsed.predicted_at == pytest.approx(1_700_000_000.123)
    assert len(parsed.token) == 16
    assert str(parsed) == pid
    assert pid.startswith(f"fraud.v2:7:{1_700_000_000_123:x}-")


def test_prediction_ids_are_unique() -> None:
    assert len({make_prediction_id("m", 1, 1.0) for _ in range(1000)}) == 1000


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "m:1:abc",
        "m:0:18bcfe56800-0123456789abcdef",
        "m:01:18bcfe56800-0123456789abcdef",
        "m:1:18BCFE56800-0123456789abcdef",
        "m:1:18bcfe56800-0123456789abcde",
        "m:1:18bcfe56800-0123456789abcdef0",
        "_m:1:18bcfe56800-0123456789abcdef",
        "m:1:18bcfe56800-0123456789abcdef\n",
    ],
)
def test_malformed_prediction_ids(bad: str) -> None:
    with pytest.raises(PredictionIdError):
        parse_prediction_id(bad)


def test_stream_ids_parse_in_stream_order() -> None:
    ids = ["1-10", "1-9", "0-0", "10-0", "2-0"]
    assert sorted(ids, key=parse_stream_id) == ["0-0", "1-9", "1-10", "2-0", "10-0"]
    with pytest.raises(ValueError):
        parse_stream_id("12")
