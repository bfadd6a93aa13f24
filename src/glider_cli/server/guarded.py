"""The protocol `glider serve` gives uvicorn (`ConnectionLimits.protocol_class()`, `server.connections`):
uvicorn's own HTTP protocol, wrapped, so that every connection is recorded under the app's limits.

Contract: `Guarded` (subclassed per app by `protocol_class`, which sets `_limits` and `_inner_class`)
makes the protocol uvicorn itself would run and passes every asyncio Protocol call through to it
unchanged; it tells the limits when its connection is made and lost (`ConnectionLimits.opened`,
`closed`), and the connection when bytes arrive while none of its requests is served (`received`).
`uvicorn_http_class()` is that protocol class (httptools when installed), learnt once.

uvicorn names this depends on, beyond asyncio's Protocol and Transport interfaces: `uvicorn.Config`
with `http=` a protocol class, which uvicorn instantiates once per connection with keyword arguments
(`config`, `server_state`, `app_state`, `_loop`) that are handed on unchanged to the wrapped class;
and `Config.load()` with `Config.http_protocol_class`, read once on a probe Config to learn which
class uvicorn picks for `http="auto"`. Nothing of uvicorn is subclassed and no private module is
imported (`tests/server/test_public_apis.py`). The wrapped protocol must never hand its transport to
another protocol: `glider serve` runs with `ws="none"`, so no WebSocket upgrade swaps it out.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

if TYPE_CHECKING:
    from glider_cli.server.connections import Connection, ConnectionLimits


class Guarded(asyncio.Protocol):
    """uvicorn's own HTTP protocol, wrapped: every call passes through; the connection is recorded."""

    _limits: ClassVar[ConnectionLimits]
    _inner_class: ClassVar[type[asyncio.Protocol]]

    def __init__(self, **uvicorn_kwargs: Any) -> None:
        make = cast(Callable[..., asyncio.Protocol], self._inner_class)
        self._inner = make(**uvicorn_kwargs)
        self._conn: Connection | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._conn = self._limits.opened(transport)
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        conn = self._conn
        if conn is not None and not conn.active:
            conn.received(data)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._conn is not None:
            self._limits.closed(self._conn)
            self._conn = None
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


async def _no_app(scope: Any, receive: Any, send: Any) -> None:
    """The probe Config's app: never called."""


@functools.cache
def uvicorn_http_class() -> type[asyncio.Protocol]:
    """The HTTP protocol class uvicorn runs for `http="auto"` (httptools when installed)."""
    import uvicorn

    probe = uvicorn.Config(_no_app, http="auto", lifespan="off", proxy_headers=False, log_config=None)
    probe.load()
    return probe.http_protocol_class
