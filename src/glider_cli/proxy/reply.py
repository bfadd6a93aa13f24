"""What the engine hands the HTTP edge: a `Reply`, and the ASGI `Scope` it reads a request's path,
query and headers from. Plain values: `server.asgi` sends a Reply (see its contract for when `after`
and `close` run); nothing here imports Starlette.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reply", "Scope"]

Scope = MutableMapping[str, Any]  # an ASGI scope (the type starlette.types.Scope names)


@dataclass
class Reply:
    """Whole (`body`, sent with Content-Length) or a stream (`stream`, chunk by chunk). A whole reply's
    `after` is its bookkeeping, run once it was handed to the server; a stream's `close` is awaited
    once it is closed, however sending ended."""

    status: int
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""
    stream: AsyncGenerator[bytes, None] | None = None
    after: Callable[[], None] | None = None
    close: Callable[[], Awaitable[None]] | None = None
