"""`LoopSink`: the event sink of the request path, which keeps the writer's work (redaction, queueing)
off a request's latency path: events are emitted on the request path and written off it (see the
class for when). One per app (`create_app`), never a module global; the lifespan drains it before
closing the writer. Event data made when written is `domain.Deferred`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from glider_cli.domain import Deferred, EventSink

_running_loop = asyncio.get_running_loop

Event = tuple[str, Mapping[str, Any], "str | None"]  # (type, data, turn_id)

# Events the staged writes take per loop pass (`LoopSink`): a few requests' worth, ~0.1 ms.
SLICE = 16


class Hub(Protocol):
    """What is woken when events are staged (`server.event_hub.EventHub`): `notify()`, called only
    while `waiters` holds any."""

    @property
    def waiters(self) -> Collection[Any]: ...

    def notify(self) -> None: ...


class LoopSink:
    """An EventSink for the request path: `emit` only appends; the real sink gets the events later,
    so the writer's redaction and encoding never add to a request's latency.

    - `emit` (a request's opening events) drains on the event loop's next pass: that is the time
      spent waiting on the upstream, right after the request went out.
    - `later.emit` (a reply's closing events: outcome, who answered) waits for the next drain: the
      next request's, or `linger` seconds at most. Drained right after a reply, they would compete
      with the client's next request as it arrives; drained with the next request's opening events,
      they cost nothing on anyone's wait, and both go out in one write. One timer serves many
      replies: armed by the first closing events, it is left armed by the drains that take them
      and, when it fires, drains only events that have waited `linger` (else it waits for them).
    - A drain hands everything pending over at once, in emit order: to `stage` when given (the
      event writer's: stamped and readable at once, `recent()` and the live streams (`hub`, woken
      then) see them), and `write_staged` writes them `linger` seconds later, `SLICE` events per
      loop pass. A drain is cheap then, and the work of writing (making records, redaction,
      encoding, the index) stays off the loop pass where the upstream's answer arrives: at c=1
      against a fast upstream, a drain that wrote at once held that answer back by ~80 us (issue
      29). Else to `write_now` (written on this thread), else event by event to `sink.emit`. The
      writer's own thread is never woken for these (that would cost the request path a wake-up
      and GIL contention).
      `drain()` (the lifespan's, before closing the writer) writes everything. Outside a running
      loop, emits pass straight through.
    """

    def __init__(
        self,
        sink: EventSink,
        write_now: Callable[[list[tuple[str, Mapping[str, Any], str | None]]], None] | None = None,
        *,
        linger: float = 0.01,
        stage: Callable[[list[tuple[str, Mapping[str, Any], str | None]]], None] | None = None,
        write_staged: Callable[[int | None], bool] | None = None,
        hub: Hub | None = None,
    ) -> None:
        self.sink = sink
        self._hub = hub
        self._write_now = write_now
        self._stage = stage if write_staged is not None else None
        self._write_staged = write_staged
        self._writing: asyncio.Handle | None = None
        self._linger = linger
        self._pending: list[tuple[str, Mapping[str, Any], str | None]] = []
        self._scheduled = False
        self._timer: asyncio.TimerHandle | None = None
        # When the closing events pending since the last drain are due (loop time); None: none are.
        self._due: float | None = None
        self.later: EventSink = _Later(self)

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        self.emit_all(((type, data, turn_id),))

    def emit_all(self, events: Iterable[Event]) -> None:
        """`emit` of each of `events` (type, data, turn_id), in order, in one call: a turn's events as
        `proxy.ledger` hands them over."""
        self._pending.extend(events)
        if not self._scheduled:
            try:
                loop = _running_loop()
            except RuntimeError:  # no loop: hand everything over now
                self.drain()
                return
            self._scheduled = True
            loop.call_soon(self._drain)

    def emit_later(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        self.emit_all_later(((type, data, turn_id),))

    def emit_all_later(self, events: Iterable[Event]) -> None:
        """`emit_later` of each of `events`, in order, in one call."""
        self._pending.extend(events)
        if not self._scheduled and self._due is None:
            try:
                loop = _running_loop()
            except RuntimeError:
                self.drain()
                return
            self._due = loop.time() + self._linger
            # One timer serves many replies: a drain does not cancel it; when it fires early
            # (the events it was set for went with a drain) it waits for the events now due.
            if self._timer is None:
                self._timer = loop.call_at(self._due, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        due = self._due
        if due is None:
            return
        loop = asyncio.get_running_loop()
        if loop.time() >= due:
            self._drain()
        else:
            self._timer = loop.call_at(due, self._on_timer)

    def drain(self) -> None:
        """Hand everything pending over and write it now (the lifespan's call at shutdown: the
        timers are cancelled)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._drain()
        if self._writing is not None:
            self._writing.cancel()
            self._writing = None
        if self._write_staged is not None:
            self._write_staged(None)

    def _write_slice(self) -> None:
        assert self._write_staged is not None
        self._writing = None
        if self._write_staged(SLICE):
            self._writing = asyncio.get_running_loop().call_soon(self._write_slice)

    def _drain(self) -> None:
        self._scheduled = False
        self._due = None
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        if self._stage is not None:
            self._stage(pending)
            hub = self._hub
            if hub is not None and hub.waiters:  # a live stream waits: wake it
                hub.notify()
            if self._writing is None:
                self._writing = asyncio.get_running_loop().call_later(self._linger, self._write_slice)
            return
        if self._write_now is not None:
            # Deferred data is made here, once (read through the Mapping protocol it would be remade
            # per key).
            self._write_now([(t, d.resolve() if type(d) is Deferred else d, turn) for t, d, turn in pending])
            return
        for type_, data, turn_id in pending:
            self.sink.emit(type_, data, turn_id=turn_id)


class _Later:
    """`LoopSink.later`: the EventSink for a reply's closing events (its `emit` and `emit_all` are
    the sink's `emit_later` and `emit_all_later` themselves: one call less per event)."""

    __slots__ = ("emit", "emit_all")

    def __init__(self, sink: LoopSink) -> None:
        self.emit = sink.emit_later
        self.emit_all = sink.emit_all_later
