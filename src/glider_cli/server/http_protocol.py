"""uvicorn's httptools protocol with coalesced writes: a response's head leaves with its first body bytes.

uvicorn writes a response's status line and headers the moment `http.response.start` is sent, and
the body with a second write. On loopback each write wakes the client, so a whole reply would cost
the client two wake-ups and Glider two syscalls.

Contract:
- `CoalescingTransport.write` holds a response head (a write that starts with `HTTP/`) until the
  next pass of the event loop (`call_soon`), before the loop polls for more input; any other write
  (body bytes) goes out at once, joined with the held head when it is still there. So a whole
  reply's head and body leave in one write, a stream's head leaves on the next loop pass even while
  the upstream has sent nothing yet, and every event of a stream leaves the moment it is sent: no
  loop pass between an upstream chunk and the client.
- `close()` writes what is buffered first; `abort()` drops it. Everything else is the real
  transport's (`get_write_buffer_size` counts the buffered bytes too).
- `CoalescingHttpToolsProtocol` is uvicorn's `HttpToolsProtocol` over that transport; pass it as
  uvicorn's `http` (see `server.run.uvicorn_options`).
- Anything scheduled with `call_soon` after a send runs after that send's bytes were written
  (`server.asgi` runs a reply's bookkeeping that way).
- When a response is complete (uvicorn's `on_response_complete`) whatever is buffered is written at
  once (a head-only reply: 204, HEAD).
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
        data = bytes(data)
        if data.startswith(b"HTTP/"):  # a response head (or 100 Continue): held for its body
            self._buffer.append(data)
            if not self._scheduled:
                self._scheduled = True
                self._loop.call_soon(self.flush)
            return
        if self._buffer:
            self._buffer.append(data)
            self.flush()
        elif not self._transport.is_closing():
            self._transport.write(data)

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
