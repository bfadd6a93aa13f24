"""Runs whose RunSSE never opens (part of `cursor.runs.CursorRuns`, see its contract): a run decided
here whose stream the client has not asked for `stream_wait` seconds after the decision (it sent the
run's BidiAppend, then timed out or went away) is closed with `outcome: abandoned` (status 499,
incomplete): a local one's model work is stopped and its held appends answered (nothing reaches
Cursor); one at Cursor (a cloud decision, or a local failure's fallback) had its appends sent, and is
recorded as a call that left the machine."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.values import replace

if TYPE_CHECKING:
    from glider_cli.cursor.runs import Run

ABANDONED = 499  # the status recorded: the client closed (here: never opened) the request's reply


class Abandon:
    adapter: CursorAdapter
    stream_wait: float

    # CursorRuns's own: a run's next phase (answers what it held).
    _settle: Callable[[Run, str], None]

    async def _watch_stream(self, run: Run) -> None:
        """Closes a run whose RunSSE never came (see the module contract)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(run.streamed.wait(), self.stream_wait)
        opened = run.opened
        if run.streamed.is_set() or run.closed or opened is None:
            return
        if run.phase != "origin":  # decided local: stop the model, answer what was held
            if run.producer is not None and not run.producer.done():
                run.producer.cancel()
                await asyncio.wait([run.producer])
            if run.closed:
                return
            self._settle(run, "abandoned")
            ms = self.stream_wait * 1000
            served = self.adapter.served_local(
                opened, run.usage, ABANDONED, ms, complete=False, answered=False, end="abandoned"
            )
        else:  # at Cursor (a fallback, or a cloud run): its appends went, its stream was never asked for
            served = self.adapter.served_origin(
                opened, ABANDONED, self.stream_wait * 1000, False, run.fallback_from
            )
            served = replace(served, end="abandoned")
        run.closed = True
        self.adapter.close(opened, served)
