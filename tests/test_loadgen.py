"""The load generator's WebSocket client (bench/loadgen.py): the frames it cuts out of the stream are
the server's, however the bytes arrive, and a run against a real server answers every message."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.frames import Frame, Opcode

from bench.loadgen import ServerFrames, websocket
from bench.service_load import Server, start_noop

KINDS = [Opcode.TEXT, Opcode.PING, Opcode.CLOSE]


def server_frame(opcode: Opcode, payload: bytes) -> bytes:
    return Frame(opcode, payload).serialize(mask=False, extensions=[])


@settings(max_examples=50, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([0, 1, 125, 126, 300, 65535, 65536, 70000]), min_size=1, max_size=6),
    seed=st.integers(0, 2**32 - 1),
)
def test_frames_come_out_whole_and_in_order_however_the_bytes_are_cut(sizes: list[int], seed: int) -> None:
    rng = random.Random(seed)
    sent = []
    for n in sizes:
        kind = rng.choice(KINDS)
        size = n if kind is Opcode.TEXT else min(n, 125)  # a control frame carries at most 125 bytes
        sent.append((kind, rng.randbytes(size)))
    stream = b"".join(server_frame(kind, payload) for kind, payload in sent)
    frames, incoming, at = [], ServerFrames(), 0
    while at < len(stream):
        step = rng.randint(1, 70_000)
        frames += incoming.feed(stream[at : at + step])
        at += step
    assert frames == [(kind.value, payload) for kind, payload in sent]
    assert incoming.buffer == bytearray()


def test_a_masked_frame_from_the_server_is_refused() -> None:
    masked = Frame(Opcode.TEXT, b"hello").serialize(mask=True, extensions=[])
    with pytest.raises(ConnectionError):
        ServerFrames().feed(masked)


@pytest.fixture(scope="module")
def noop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_noop("uvicorn", Path(tmp_path_factory.mktemp("noop")))
    yield server
    server.close()


def test_a_run_answers_every_message_once(noop: Server) -> None:
    messages = [
        json.dumps({"type": "predict", "id": i, "model": "default", "features": [0.5] * (i % 300)})
        for i in range(3000)
    ]
    result = asyncio.run(websocket(noop.ws_url, messages, window=64))
    assert (result["count"], result["errors"]) == (3000, 0)
    assert result["messages_per_second"] > 0 and result["p50"] <= result["max"]
