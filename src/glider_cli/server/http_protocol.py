"""uvicorn's httptools protocol with coalesced writes: one socket write per event-loop pass.

uvicorn writes a response's status line and headers the moment `http.response.start` is sent, and
the body with a second write. On loopback each write wakes the client, so a whole reply costs the
client two wake-ups and Glider two syscalls (a stream's headers and first event likewise).

Contract:
- `CoalescingTransport.write` only buffers; the buffered bytes go out in one `write` on the next
  pass of the event loop (`call_soon`), before the loop polls for more input. So headers and body
  sent in one handler step leave together, and a stream's events still leave one loop pass after
  they are produced (flushed event by event; chunks produced in the same pass share a write).
- `close()` writes what is buffered first; `abort()` drops it. Everything else is the real
  transport's (`get_write_buffer_size` counts the buffered bytes too).
- `CoalescingHttpToolsProtocol` is uvicorn's `HttpToolsProtocol` over that transport; pass it as
  uvicorn's `http` (see `server.run.uvicorn_options`).
- Anything scheduled with `call_soon` after a send runs after that send's bytes were written
  (`server.asgi` runs a reply's bookkeeping that way).
- When a response is complete (uvicorn's `on_response_complete`) whatever is buffered is written at
  once: a whole reply's head and body leave in one write without waiting for the next loop pass.
- Every request's scope carries `scope["extensions"][server.asgi.ON_CONNECTION_LOST]`: a list of
  callables, called once each when the connection is lost (after uvicorn's own handling), so an
  endpoint learns of a disconnect without a task waiting on `receive()`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from glider_cli.server.asgi import ON_CONNECTION_LOST


class CoalescingTransport:
    """Wraps an `asyncio.Transport`; see the module contract."""

    __slots__ = ("_buffer", "_loop", "_scheduled", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._buffer: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        self._buffer.append(bytes(data))
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        self._scheduled = False
        if not self._buffer:
            return
        buffer, self._buffer = self._buffer, []
        if not self._transport.is_closing():
            self._transport.write(buffer[0] if len(buffer) == 1 else b"".join(buffer))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._buffer.clear()
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(b) for b in self._buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol writing through a `CoalescingTransport`, with the lost-connection
    hooks of the module contract."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._lost_hooks: list[Callable[[], None]] = []
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]

    def on_message_begin(self) -> None:
        super().on_message_begin()
        extensions: dict[str, Any] = self.scope.setdefault("extensions", {})  # type: ignore[assignment]
        extensions[ON_CONNECTION_LOST] = self._lost_hooks

    def on_response_complete(self) -> None:
        transport = self.transport
        if isinstance(transport, CoalescingTransport):
            transport.flush()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        hooks, self._lost_hooks = self._lost_hooks, []
        for hook in hooks:
            hook()
