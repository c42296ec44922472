"""uvicorn's WebSocket protocol with the writes of one event-loop iteration sent as one.

A client that pipelines messages on ``/ws`` has many in flight, and the service answers each with a
frame of its own. uvicorn hands every frame to the transport at once, and the event loop (uvloop or
asyncio's) writes it at once: one ``send`` system call per reply. A small send costs the kernel
much the same whatever its size (on loopback, it also runs the receiving side's TCP), so replies
that leave together cost a fraction of what they cost one by one.

:class:`CoalescingWebSockets` is uvicorn's own sans-I/O WebSocket protocol
(``websockets-sansio``) writing through a :class:`TickWriter`: the bytes written during one
iteration of the event loop are gathered and handed to the transport once, by a callback the
first write schedules (``loop.call_soon``), so they go out before the loop next waits for I/O. The
bytes and their order are the same; only the number of system calls changes. A reply waits at most
for the callbacks already due in the same iteration. Closing the transport writes what is
gathered first; aborting it drops it, as the transport drops its own buffer.

``acog serve`` passes the class to uvicorn (its ``ws`` option takes a protocol class).
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


class TickWriter:
    """A transport whose ``write`` gathers the bytes of one event-loop iteration and writes them to
    ``transport`` once, at the next turn of ``loop``; anything else goes to ``transport``."""

    __slots__ = ("_chunks", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._chunks: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._chunks:
            self._loop.call_soon(self.flush)
        self._chunks.append(data)

    def flush(self) -> None:
        """Write what is gathered, in one call (nothing when the transport is closing: it would
        drop the bytes)."""
        chunks, self._chunks = self._chunks, []
        if chunks and not self._transport.is_closing():
            self._transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._chunks = []
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CoalescingWebSockets(WebSocketsSansIOProtocol):
    """uvicorn's ``websockets-sansio`` protocol, writing through a :class:`TickWriter`."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.transport = TickWriter(cast(asyncio.Transport, transport), self.loop)  # type: ignore[assignment]
