"""`EventHub`: wakes the dashboard's live event streams (`server.events_api`) when the request path's
events have been written. Every app has one (`create_app`: its `LoopSink` hands the writer each loop
pass's events, then calls `notify()` when `waiters` holds any stream), so this module imports neither
Starlette nor the dashboard's routes, which are built when first asked for (issue 29's cold start).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from glider_cli.store.eventlog.writer import EventWriter

__all__ = ["EventHub"]


class EventHub:
    """Wakes the live streams when the request path's events have been written (`server.events_api`)."""

    def __init__(
        self,
        writer: EventWriter | None,
        *,
        poll: float = 1.0,
        max_age: float = 3.0,
        retry_ms: int = 200,
    ) -> None:
        self.writer = writer
        self.poll = poll
        self.max_age = max_age
        self.retry_ms = retry_ms
        self.closed = False
        # The streams waiting for events (`LoopSink` calls `notify()` only when there is one).
        self.waiters: set[asyncio.Future[None]] = set()

    def notify(self) -> None:
        """Wake every waiting stream; safe from any thread."""
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for fut in list(self.waiters):
            loop = fut.get_loop()
            if loop is running:
                _wake(fut)
            elif not loop.is_closed():
                loop.call_soon_threadsafe(_wake, fut)

    async def wait(self, timeout: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.add(fut)
        try:
            await asyncio.wait((fut,), timeout=timeout)
        finally:
            self.waiters.discard(fut)

    def close(self) -> None:
        """End every stream at its next wake-up."""
        self.closed = True
        self.notify()

    def after(self, cursor: str, limit: int) -> list[dict[str, Any]]:
        """The ring's events with an id above `cursor`, oldest first, at most `limit` (the oldest)."""
        assert self.writer is not None
        return self.writer.after(cursor, limit)

    def start_cursor(self, backlog: int) -> str:
        assert self.writer is not None
        ring = self.writer.recent(backlog + 1)
        if len(ring) > backlog:
            return str(ring[0]["id"])
        return ""


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
