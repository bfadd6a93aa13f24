"""A request's records: the one place the engine writes a turn's events and tells its observers.

    ledger = Ledger(turns, sink, later=closing_sink, observer=, refused_observer=)
    ledger.record(events, later=False, decided=None)  # every event a turn's core gave, in order
    opened = ledger.open(chat, body, gate=, decided=)  # `Turns.open`, its events recorded at once
    ledger.close(observed, served, later=True)         # `Turns.close`'s events, then the observer
    ledger.refused(inb, exc)                           # a gate refusal's events, then its observer
    ledger.emit(kind, data, turn_id, later=False)      # one event of the engine's own

Events go to `sink` (a request's opening events: the server's `LoopSink`, drained on the loop's next
pass) or, with `later`, to `later` (closing events: written with the next drain, never on a wait).
`decided`: a door's own fields for the `RouteDecided` record (the Cursor door's `client` and what the
Cursor message was), laid over the decision's record when it is written. The observers are told of a
request once its reply is out (`Observed`, `proxy.calls`) and of a gate refusal; one that raises
never fails a request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from glider_cli.domain import ChatRequest, Deferred, EventSink
from glider_cli.errors import GateRefused
from glider_cli.proxy.calls import Inbound, Observed
from glider_cli.router.decide import Gate
from glider_cli.store.eventlog.events import ROUTE_DECIDED
from glider_cli.turns.lifecycle import Opened, Served, Turns

__all__ = ["Ledger", "Observer", "RefusedObserver"]

Event = tuple[str, Mapping[str, Any], str | None]  # (kind, data, turn_id), as `Turns` gives them
Observer = Callable[[Observed, Served], None]
EmitAll = Callable[[Iterable[Event]], None]
RefusedObserver = Callable[[Inbound, GateRefused], None]


class Ledger:
    """See the module contract. One per engine."""

    def __init__(
        self,
        turns: Turns,
        sink: EventSink,
        *,
        later: EventSink | None = None,
        observer: Observer | None = None,
        refused_observer: RefusedObserver | None = None,
    ) -> None:
        self.turns = turns
        self.sink = sink
        self.later = later if later is not None else sink
        # A sink that takes a turn's events in one call (the server's `LoopSink`); else one by one.
        self._all: EmitAll | None = getattr(sink, "emit_all", None)
        self._later_all: EmitAll | None = getattr(self.later, "emit_all", None)
        # Told of every reply once it is out (`glider serve`'s line per request, the telemetry's spans).
        self.observer = observer
        # Told of each request the capability gate refused (`glider serve` prints a line for it too).
        self.refused_observer = refused_observer

    def record(
        self, events: Iterable[Event], *, later: bool = False, decided: Mapping[str, Any] | None = None
    ) -> None:
        """Write `events` in order: the one loop over a turn's events (`tests/test_code_rules.py`)."""
        if decided is None:
            many = self._later_all if later else self._all
            if many is not None:
                many(events)
                return
        sink = self.later if later else self.sink
        for kind, data, turn_id in events:
            if decided is not None and kind == ROUTE_DECIDED:
                data = _laid_over(data, decided)
            sink.emit(kind, data, turn_id=turn_id)

    def emit(self, kind: str, data: Mapping[str, Any], turn_id: str | None, *, later: bool = False) -> None:
        (self.later if later else self.sink).emit(kind, data, turn_id=turn_id)

    def open(
        self,
        chat: ChatRequest,
        body: Mapping[str, Any] | None = None,
        *,
        gate: Gate | None = None,
        decided: Mapping[str, Any] | None = None,
    ) -> Opened:
        """`Turns.open`, its events recorded at once. Raises what it raises (GateRefused, GliderError):
        nothing is recorded then."""
        opened = self.turns.open(chat, body, gate=gate)
        self.record(opened.events, decided=decided)
        return opened

    def close(self, observed: Observed, served: Served, *, later: bool = True) -> None:
        """The turn's closing events (outcome, who answered, the family's bookkeeping), then the observer."""
        self.record(self.turns.close(observed.opened, served), later=later)
        if self.observer is not None:
            try:
                self.observer(observed, served)
            except Exception:  # a line that cannot be printed never fails a request
                pass

    def refused(self, inb: Inbound, exc: GateRefused) -> None:
        """A request the capability gate refused: recorded like any other (`turns.lifecycle`), with a
        locally served family's regret, then told to the refused observer."""
        self.record(exc.events)
        self.record(self.turns.regret.take())
        if self.refused_observer is not None:
            try:
                self.refused_observer(inb, exc)
            except Exception:  # a line that cannot be printed never fails a request
                pass


def _laid_over(data: Mapping[str, Any], extra: Mapping[str, Any]) -> Deferred:
    return Deferred(lambda: {**data, **extra})
