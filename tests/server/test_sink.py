"""server.sink: LoopSink hands events over off the request path; Deferred data is made once, when written."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from glider_cli.domain import Deferred
from glider_cli.server.sink import LoopSink


class _List:
    def __init__(self) -> None:
        self.got: list[tuple[str, Mapping[str, Any], str | None]] = []

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        self.got.append((type, data, turn_id))


def test_loop_sink_defers_to_the_next_loop_iteration() -> None:
    inner = _List()
    sink = LoopSink(inner)

    async def go() -> tuple[int, int]:
        sink.emit("A", {"n": 1}, turn_id="t")
        sink.emit("B", {"n": 2})
        before = len(inner.got)
        await asyncio.sleep(0)
        return before, len(inner.got)

    assert asyncio.run(go()) == (0, 2)
    assert [t for t, _, _ in inner.got] == ["A", "B"] and inner.got[0][2] == "t"
    sink.emit("C", {})  # no running loop: passes straight through
    assert inner.got[-1][0] == "C"


def test_loop_sink_closing_events_wait_for_the_next_drain_or_the_linger() -> None:
    inner = _List()
    written: list[list[str]] = []
    sink = LoopSink(inner, lambda items: written.append([t for t, _, _ in items]), linger=0.05)

    async def go() -> None:
        sink.later.emit("Outcome1", {"n": 1}, turn_id="t1")
        await asyncio.sleep(0)
        assert written == []  # not on the next pass: it waits for the next request's drain
        sink.emit("Opened2", {"n": 2}, turn_id="t2")
        await asyncio.sleep(0)
        assert written == [["Outcome1", "Opened2"]]  # one write, emit order kept
        sink.later.emit("Outcome2", {"n": 3}, turn_id="t2")
        sink.later.emit("Served2", {"n": 4}, turn_id="t2")
        await asyncio.sleep(0.01)
        assert len(written) == 1
        await asyncio.sleep(0.1)  # nobody else drained: the linger did
        assert written == [["Outcome1", "Opened2"], ["Outcome2", "Served2"]]
        sink.later.emit("Last", {})
        sink.drain()  # the lifespan's drain at shutdown takes what is pending and cancels the timer
        await asyncio.sleep(0.1)

    asyncio.run(go())
    assert written[-1] == ["Last"] and len(written) == 3
    assert inner.got == []  # with write_now, nothing goes through emit
    sink.later.emit("NoLoop", {})  # no running loop: straight through
    assert written[-1] == ["NoLoop"]


def test_a_turns_events_handed_over_in_one_call_keep_their_order_and_their_drains() -> None:
    # `emit_all` / `later.emit_all` (the ledger's one call per turn) behave as one `emit` per event.
    inner = _List()
    written: list[list[str]] = []
    sink = LoopSink(inner, lambda items: written.append([t for t, _, _ in items]), linger=0.05)

    async def go() -> None:
        sink.later.emit_all([("Outcome1", {}, "t1"), ("Served1", {}, "t1")])
        await asyncio.sleep(0)
        assert written == []  # closing events wait for the next drain
        sink.emit_all([("Opened2", {}, "t2"), ("Decided2", {}, "t2")])
        sink.emit("Bound2", {}, turn_id="t2")
        await asyncio.sleep(0)
        assert written == [["Outcome1", "Served1", "Opened2", "Decided2", "Bound2"]]
        sink.later.emit_all([("Outcome2", {}, "t2")])
        await asyncio.sleep(0.1)  # nobody else drained: the linger did
        assert written[-1] == ["Outcome2"]

    asyncio.run(go())
    sink.emit_all([("NoLoop", {}, None)])  # no running loop: straight through
    assert written[-1] == ["NoLoop"]


def test_deferred_event_data_is_made_once_when_first_read() -> None:
    calls: list[int] = []

    def make() -> dict[str, Any]:
        calls.append(1)
        return {"target": "cloud", "trace": [{"rule": "a"}]}

    d = Deferred(make)
    assert calls == []  # emitting costs nothing
    assert dict(d) == {"target": "cloud", "trace": [{"rule": "a"}]}
    assert d["target"] == "cloud" and len(d) == 2 and list(d) == ["target", "trace"]
    assert d.copy() == dict(d) and d.copy() is not d.copy()
    assert d.resolve() is d.resolve()
    assert calls == [1]


def test_loop_sink_hands_the_writer_deferred_data_made_once() -> None:
    written: list[list[tuple[str, Any, str | None]]] = []
    made: list[int] = []

    def make() -> dict[str, Any]:
        made.append(1)
        return {"rule": "r"}

    class Sink:
        def emit(self, type: str, data: Any, *, turn_id: str | None = None) -> None:
            raise AssertionError("write_now is the path")

    async def go() -> None:
        sink = LoopSink(Sink(), written.append)
        sink.emit("TurnOpened", {"ask": "hi"}, turn_id="t1")
        sink.emit("RouteDecided", Deferred(make), turn_id="t1")
        await asyncio.sleep(0)

    asyncio.run(go())
    assert written == [[("TurnOpened", {"ask": "hi"}, "t1"), ("RouteDecided", {"rule": "r"}, "t1")]]
    assert type(written[0][1][1]) is dict and made == [1]


def test_one_linger_timer_serves_many_replies() -> None:
    """A reply's closing events arm the linger timer; the next request's drain takes them and leaves
    the timer be (no new timer per reply, no cancel per request): 100 request/reply cycles cost about
    one timer per linger, not one per reply, and what the last reply left is still written."""
    written: list[list[str]] = []
    sink = LoopSink(_List(), lambda items: written.append([t for t, _, _ in items]), linger=0.05)
    timers: list[float] = []
    spent: list[float] = []

    async def go() -> None:
        loop = asyncio.get_running_loop()
        call_at, call_later = loop.call_at, loop.call_later

        def counted_at(when: float, *args: Any, **kw: Any) -> asyncio.TimerHandle:
            timers.append(when)
            return call_at(when, *args, **kw)

        def counted_later(delay: float, *args: Any, **kw: Any) -> asyncio.TimerHandle:
            timers.append(-delay)
            return call_later(delay, *args, **kw)

        loop.call_at = counted_at  # type: ignore[method-assign]
        loop.call_later = counted_later  # type: ignore[method-assign]
        t0 = time.monotonic()
        for i in range(100):
            sink.emit(f"Opened{i}", {})
            await asyncio.sleep(0)
            sink.later.emit(f"Outcome{i}", {})
        assert written[-1] == ["Outcome98", "Opened99"]
        spent.append(time.monotonic() - t0)
        armed = len(timers)
        assert armed <= 1 + 2 * spent[0] / 0.05, (timers, spent)
        await asyncio.sleep(0.15)
        assert written[-1] == ["Outcome99"]

    asyncio.run(go())
    assert sum(len(w) for w in written) == 200


def test_staged_events_are_readable_at_the_next_pass_and_written_after_the_linger_in_slices(
    tmp_path: Any,
) -> None:
    """With the event writer's `stage`/`write_staged`, a drain only stamps and hands the events over
    (readable at once), and the writing happens `linger` later, `SLICE` events per loop pass: off the
    pass where the upstream's answer arrives (issue 29). `drain()` writes everything."""
    from glider_cli.config.settings import ContextSettings
    from glider_cli.paths import Paths
    from glider_cli.server.sink import SLICE
    from glider_cli.store.eventlog.writer import EventWriter

    paths = Paths(home=tmp_path)
    writer = EventWriter(paths, ContextSettings())
    sink = LoopSink(
        _List(), writer.write_now, linger=0.05, stage=writer.stage, write_staged=writer.write_staged
    )

    def on_disk() -> int:
        return sum(len(p.read_bytes().splitlines()) for p in paths.context.glob("events-*.jsonl"))

    async def go() -> None:
        for i in range(SLICE * 2 + 3):
            sink.emit("Note", {"i": i}, turn_id="t")
        await asyncio.sleep(0)
        assert len(writer.recent()) == SLICE * 2 + 3  # staged: readable already
        assert not paths.context.exists() or on_disk() == 0  # and not written yet
        await asyncio.sleep(0.08)  # the linger, then one slice per pass
        assert on_disk() == SLICE * 2 + 3
        sink.emit("Last", {})
        await asyncio.sleep(0)
        sink.drain()  # shutdown: everything written now
        assert on_disk() == SLICE * 2 + 4

    asyncio.run(go())
    writer.close()
    assert [e["data"].get("i") for e in writer.recent()][:3] == [0, 1, 2]
