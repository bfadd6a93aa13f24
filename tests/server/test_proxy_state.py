"""The proxy's small in-memory state: usage read from reply bytes, the count_tokens calibration, LoopSink;
and, live, that SSE is flushed event by event and that count_tokens estimates follow reported usage."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from fake_upstream import FakeUpstream
from glider_cli.server.state import LoopSink, UsageCalibrator, usage_from_bytes


def test_usage_from_every_protocol() -> None:
    a = usage_from_bytes(
        b'data: {"usage":{"input_tokens":12,"output_tokens":1}}\n\ndata: {"usage":{"output_tokens":30}}\n\n'
    )
    assert (a.input_tokens, a.output_tokens) == (12, 30)
    c = usage_from_bytes(b'{"usage": {"prompt_tokens": 7, "completion_tokens": 3}}')
    assert (c.input_tokens, c.output_tokens) == (7, 3)
    o = usage_from_bytes(b'{"done":true,"prompt_eval_count":40,"eval_count":9}\n')
    assert (o.input_tokens, o.output_tokens) == (40, 9)
    none = usage_from_bytes(b'data: {"type":"content_block_delta","delta":{"text":"hi"}}\n\n')
    assert (none.input_tokens, none.output_tokens) == (None, None)


def test_calibrator_moves_towards_reported_usage_and_is_clamped() -> None:
    cal = UsageCalibrator(alpha=0.5)
    assert cal.estimate("b", 100) == 100
    cal.record("b", 100, 200)
    assert cal.estimate("b", 100) == 200
    cal.record("b", 100, 100)
    assert cal.estimate("b", 100) == 150
    cal.record("x", 10, 10_000)  # one absurd reply cannot multiply estimates by more than 4
    assert cal.estimate("x", 10) == 40
    cal.record("y", 0, 50)
    cal.record("y", 10, None)
    assert cal.ratio("y") == 1.0


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


@pytest.mark.live
def test_sse_is_flushed_event_by_event(tmp_path: Path) -> None:
    with (
        FakeUpstream(models=["m"], ollama_models=["qwen-local"]) as fake,
        GliderServer(backends_yaml(fake.url), tmp_path) as g,
    ):
        fake.set_reply(text="one two three four five six", event_delay=0.2)
        body = {
            "model": "m",
            "max_tokens": 8,
            "stream": True,
            "messages": [{"role": "user", "content": "/cloud"}],
        }
        with httpx.stream("POST", g.url + "/v1/messages", json=body, timeout=30) as r:
            assert "content-length" not in r.headers
            chunks = r.iter_raw()
            first = next(chunks)
            assert b"message_start" in first and b"message_stop" not in first
            rest = b"".join(chunks)
        assert b"message_stop" in rest


@pytest.mark.live
def test_count_tokens_estimate_is_corrected_by_usage_seen(tmp_path: Path) -> None:
    with (
        FakeUpstream(models=["m"], ollama_models=["qwen-local"]) as fake,
        GliderServer(backends_yaml(fake.url), tmp_path) as g,
    ):
        text = "count these words please /local " * 40
        body = {"model": "m", "messages": [{"role": "user", "content": text}]}
        first = httpx.post(g.url + "/v1/messages/count_tokens", json=body).json()["input_tokens"]
        # the local backend then reports far more input tokens than bytes/4 suggested
        fake.set_reply(usage=(first * 3, 5))
        r = httpx.post(g.url + "/v1/messages", json={**body, "max_tokens": 8})
        assert r.status_code == 200
        g.wait_for("FulfilledLocal")
        second = httpx.post(g.url + "/v1/messages/count_tokens", json=body).json()["input_tokens"]
        assert second > first


def test_deferred_event_data_is_made_once_when_first_read() -> None:
    from glider_cli.server.state import Deferred

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
    import asyncio

    from glider_cli.server.state import Deferred, LoopSink

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
