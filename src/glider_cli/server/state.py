"""Small per-app state the proxy keeps in memory: turn ids per session and the count_tokens calibration.

Contract:
- `UsageCalibrator` learns, per backend, the ratio between the input tokens a backend reported and
  Glider's bytes/4 estimate for the same request, and corrects later estimates with it (an
  exponential moving average, clamped to [0.25, 4] so one odd reply cannot wreck it).
- `usage_from_bytes` reads token counts out of any protocol's reply bytes without parsing them
  (Anthropic/Responses `input_tokens`/`output_tokens`, Chat `prompt_tokens`/`completion_tokens`,
  Ollama `prompt_eval_count`/`eval_count`); the largest value seen for each wins, which is right for
  cumulative stream usage.
- `LoopSink` keeps the event writer's work (redaction, queueing) off a request's latency path.
All of these are owned by the app (one per `create_app`), never module globals.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from glider_cli.domain import EventSink

_USAGE_RE = re.compile(
    rb'"(input_tokens|output_tokens|prompt_tokens|completion_tokens|prompt_eval_count|eval_count)"\s*:\s*(\d+)'
)
_INPUT_KEYS = {b"input_tokens", b"prompt_tokens", b"prompt_eval_count"}


class Usage:
    """Token counts seen in a reply (None until seen)."""

    __slots__ = ("input_tokens", "output_tokens")

    def __init__(self) -> None:
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def feed(self, data: bytes) -> None:
        if b"_tokens" not in data and b"eval_count" not in data:
            return
        for m in _USAGE_RE.finditer(data):
            n = int(m.group(2))
            if m.group(1) in _INPUT_KEYS:
                if self.input_tokens is None or n > self.input_tokens:
                    self.input_tokens = n
            elif self.output_tokens is None or n > self.output_tokens:
                self.output_tokens = n


def usage_from_bytes(data: bytes) -> Usage:
    u = Usage()
    u.feed(data)
    return u


class UsageCalibrator:
    def __init__(self, alpha: float = 0.3) -> None:
        self._alpha = alpha
        self._ratio: dict[str, float] = {}

    def record(self, backend: str, estimated: int, actual: int | None) -> None:
        if not actual or estimated <= 0:
            return
        r = min(4.0, max(0.25, actual / estimated))
        prev = self._ratio.get(backend)
        self._ratio[backend] = r if prev is None else prev + self._alpha * (r - prev)

    def ratio(self, backend: str) -> float:
        return self._ratio.get(backend, 1.0)

    def estimate(self, backend: str, estimated: int) -> int:
        return max(1, round(estimated * self.ratio(backend))) if estimated > 0 else 1


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


class LoopSink:
    """An EventSink for the request path: `emit` only appends; the real sink gets the events later,
    so the writer's redaction and encoding never add to a request's latency.

    - `emit` (a request's opening events) drains on the event loop's next pass: that is the time
      spent waiting on the upstream, right after the request went out.
    - `later.emit` (a reply's closing events: outcome, who answered) waits for the next drain: the
      next request's, or `linger` seconds at most. Drained right after a reply, they would compete
      with the client's next request as it arrives; drained with the next request's opening events,
      they cost nothing on anyone's wait, and both go out in one write.
    - `drain()` hands everything pending over at once, in emit order (the lifespan calls it before
      closing the writer): to `write_now` when given (the event writer's batch path: written on this
      thread, no hand-over to the writer's thread, which would cost the request path a wake-up and
      GIL contention), else event by event to `sink.emit`. Outside a running loop, emits pass
      straight through.
    """

    def __init__(
        self,
        sink: EventSink,
        write_now: Callable[[list[tuple[str, Mapping[str, Any], str | None]]], None] | None = None,
        *,
        linger: float = 0.01,
    ) -> None:
        self.sink = sink
        self._write_now = write_now
        self._linger = linger
        self._pending: list[tuple[str, Mapping[str, Any], str | None]] = []
        self._scheduled = False
        self._timer: asyncio.TimerHandle | None = None
        self.later: EventSink = _Later(self)

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        self._pending.append((type, data, turn_id))
        if not self._scheduled:
            loop = self._loop_or_drain()
            if loop is not None:
                self._scheduled = True
                loop.call_soon(self.drain)

    def emit_later(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        self._pending.append((type, data, turn_id))
        if not self._scheduled and self._timer is None:
            loop = self._loop_or_drain()
            if loop is not None:
                self._timer = loop.call_later(self._linger, self.drain)

    def _loop_or_drain(self) -> asyncio.AbstractEventLoop | None:
        """The running loop; with none, everything pending is handed over now and None returned."""
        try:
            return asyncio.get_running_loop()
        except RuntimeError:
            self.drain()
            return None

    def drain(self) -> None:
        self._scheduled = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        if self._write_now is not None:
            # Deferred data is made here, once (read through the Mapping protocol it would be remade
            # per key).
            self._write_now([(t, d.resolve() if type(d) is Deferred else d, turn) for t, d, turn in pending])
            return
        for type_, data, turn_id in pending:
            self.sink.emit(type_, data, turn_id=turn_id)


class _Later:
    """`LoopSink.later`: the EventSink for a reply's closing events."""

    __slots__ = ("_sink",)

    def __init__(self, sink: LoopSink) -> None:
        self._sink = sink

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        self._sink.emit_later(type, data, turn_id=turn_id)
