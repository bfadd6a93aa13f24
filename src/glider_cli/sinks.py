"""How an event leaves the request path: the sink it is emitted to, and data made only when written.

Contract: `EventSink.emit(type, data, turn_id=)` is what the proxy, the turns and the delegate
runner put events through; it must not block on disk (the store's `EventWriter` and the server's
`LoopSink` are the sinks). `Deferred(make)` is event data that `make()` builds on first use, when
the event is written rather than when it is emitted: only for data derived from immutable values,
so the record is the same either way. Re-exported by `glider_cli.domain`; imports nothing of Glider.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol


class Deferred(Mapping[str, Any]):
    """Event data made on first use: `make()` runs when the event is written, not when it is emitted.
    For data derived from immutable values only (a RouteDecision), so the record is the same."""

    __slots__ = ("_data", "_make")

    def __init__(self, make: Callable[[], dict[str, Any]]) -> None:
        self._make = make
        self._data: dict[str, Any] | None = None

    def resolve(self) -> dict[str, Any]:
        """The data, made on the first call."""
        if self._data is None:
            self._data = self._make()
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self.resolve()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.resolve())

    def __len__(self) -> int:
        return len(self.resolve())

    def copy(self) -> dict[str, Any]:
        return dict(self.resolve())


class EventSink(Protocol):
    """Where the proxy and the delegate runner put events. Must not block on disk."""

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None: ...
