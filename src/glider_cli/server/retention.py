"""Retention in `glider serve`: day files older than `context.retain_days` are pruned once a day.

`run_retention(store, sink, *, first_delay, interval)` is the lifespan's background task: after
`first_delay` seconds (so starting the server costs nothing), then every `interval` seconds (a day),
it runs `ContextStore.retain()` on a worker thread and records what it did as one `EventsPruned`
event: {retain_days, cutoff, deleted (day files), bytes_freed} or {retain_days, error}. A failing run
is recorded and the next one still happens; cancelling the task (shutdown) stops it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from glider_cli.domain import EventSink
from glider_cli.errors import StoreError
from glider_cli.store.eventlog.events import EVENTS_PRUNED

if TYPE_CHECKING:
    from glider_cli.store.context_store import ContextStore

DAY = 86_400.0
# The first run waits this long after startup (read at call time).
FIRST_DELAY = 60.0


async def run_retention(
    store: ContextStore, sink: EventSink, *, first_delay: float | None = None, interval: float = DAY
) -> None:
    await asyncio.sleep(FIRST_DELAY if first_delay is None else first_delay)
    while True:
        try:
            data = await asyncio.to_thread(store.retain)
        except StoreError as exc:
            data = {"retain_days": store.settings.retain_days, "error": exc.message}
        sink.emit(EVENTS_PRUNED, data)
        await asyncio.sleep(interval)
