"""The load generator's WebSocket client (bench/loadgen.py): the frames it cuts out of the stream are
the server's, however the bytes arrive (a run against a real server: ``tests/test_noop_app.py``)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.frames import Frame, Opcode

from bench.loadgen import ServerFrames

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
