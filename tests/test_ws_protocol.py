"""The WebSocket protocol ``acog serve`` gives uvicorn: the writes of one event-loop iteration reach
the socket as one, the same bytes in the same order.

The WebSocket's own behaviour through it (pipelined replies in order, refusals, limits, closing) is
tested end to end against the real service in ``tests/e2e`` and ``tests/hardening``; here are the
writer's rules, on a real event loop, and one real uvicorn server over a real socket.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from websockets.sync.client import connect

from service.ws_protocol import CoalescingWebSockets, TickWriter

from .support.private_redis import free_port


class Recording:
    """The transport calls a :class:`TickWriter` makes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.calls.append(("write", data))

    def close(self) -> None:
        self.calls.append(("close", None))
        self.closing = True

    def abort(self) -> None:
        self.calls.append(("abort", None))
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_the_writes_of_one_iteration_go_out_once_in_order_at_the_next_turn() -> None:
    async def scenario() -> list[tuple[str, Any]]:
        transport = Recording()
        writer = TickWriter(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
        for chunk in (b"a", b"", b"bc", b"d"):
            writer.write(chunk)
        assert transport.calls == []  # nothing written inside the iteration
        await asyncio.sleep(0)
        writer.write(b"e")
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # no further write is scheduled by an empty turn
        return transport.calls

    assert run(scenario()) == [("write", b"abcd"), ("write", b"e")]


def test_closing_writes_what_is_gathered_first_and_aborting_drops_it() -> None:
    async def scenario() -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
        loop = asyncio.get_running_loop()
        closed, aborted = Recording(), Recording()
        first, second = TickWriter(closed, loop), TickWriter(aborted, loop)  # type: ignore[arg-type]
        first.write(b"last frame")
        first.close()
        second.write(b"never sent")
        second.abort()
        await asyncio.sleep(0)  # the scheduled flushes find nothing left
        return closed.calls, aborted.calls

    closed, aborted = run(scenario())
    assert closed == [("write", b"last frame"), ("close", None)]
    assert aborted == [("abort", None)]


def test_an_empty_write_schedules_nothing_and_other_calls_reach_the_transport() -> None:
    async def scenario() -> tuple[TickWriter, Recording]:
        transport = Recording()
        writer = TickWriter(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
        writer.write(b"")
        await asyncio.sleep(0)
        return writer, transport

    writer, transport = run(scenario())
    assert transport.calls == []
    assert writer.get_extra_info("peername") == "info:peername"
    assert not writer.is_closing()


async def echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A WebSocket that answers every text message with ``{"id": ..., "n": ...}`` at once."""
    assert scope["type"] == "websocket"
    await receive()
    await send({"type": "websocket.accept"})
    while (message := await receive())["type"] == "websocket.receive":
        body = json.loads(message["text"])
        await send({"type": "websocket.send", "text": json.dumps({"id": body["id"], "n": len(body["pad"])})})


@pytest.fixture
def served() -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(echo, host="127.0.0.1", port=port, ws=CoalescingWebSockets, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            threading.Event().wait(0.01)
    yield f"ws://127.0.0.1:{port}/"
    server.should_exit = True
    thread.join(10)


def test_pipelined_replies_through_uvicorn_arrive_whole_and_in_order(served: str) -> None:
    messages: list[dict[str, Any]] = [{"id": i, "pad": "x" * (i % 300)} for i in range(2000)]
    with connect(served, open_timeout=10) as ws:
        for message in messages:
            ws.send(json.dumps(message))
        replies = [json.loads(ws.recv(timeout=30)) for _ in messages]
    assert replies == [{"id": m["id"], "n": len(m["pad"])} for m in messages]
