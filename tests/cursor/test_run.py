"""One Cursor run's phases (`cursor.run.Run`) and its outcome, recorded once (`cursor.run.Outcome`),
on their own: held appends answered here or forwarded to Cursor in seqno order, an abandoned run's
record, the agent loop's token counts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from glider_cli.cursor.front import HttpRequest, HttpResponse
from glider_cli.cursor.run import ABANDONED, Outcome, Run
from glider_cli.protocol.cursor import writers as w
from glider_cli.turns.lifecycle import Served

OPENED: Any = object()  # what the router opened: only handed back to the adapter here


class Adapter:
    """The `CursorAdapter` methods a run records its outcome with; `closed` is what it recorded."""

    def __init__(self) -> None:
        self.closed: list[Served] = []

    def served_local(self, opened: Any, usage: Any, status: int, ms: float, **kw: Any) -> Served:
        data = {k: kw[k] for k in ("complete", "answered", "disconnected", "end")}
        return Served("local-backend", "local", None, status, usage.input_tokens, usage.output_tokens, **data)

    def served_origin(self, opened: Any, status: int, ms: float, complete: bool, fell: Any) -> Served:
        return Served("cursor", "cloud", None, status, complete=complete, fallback_from=fell)

    def close(self, opened: Any, served: Served) -> None:
        assert opened is OPENED
        self.closed.append(served)


class Origin:
    """Cursor, for a request that came over HTTP/2: answers each with its body, in the order sent."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def exchange(self, request: HttpRequest, on_end: Callable[..., None] | None) -> HttpResponse:
        self.sent.append(request.body)
        await asyncio.sleep(0)
        return HttpResponse(200, [], b"cursor: " + request.body)


def _append(origin: Origin, body: bytes) -> HttpRequest:
    return HttpRequest("api2.cursor.sh", 443, "POST", "/BidiAppend", [], body, origin)


def _run(adapter: Adapter) -> Run:
    return Run("r1", None, adapter)


def test_held_appends_are_answered_here_at_the_first_output() -> None:
    async def go() -> tuple[list[HttpResponse], str, bool]:
        run = _run(Adapter())
        held = [run.hold(n, _append(Origin(), b"m%d" % n)) for n in (0, 1)]
        run.decide("conv", OPENED)
        producer = asyncio.get_running_loop().create_task(asyncio.sleep(0))
        run.local("hi", producer)
        assert run.phase == "local_wait" and not run.settled
        run.first_output()
        await producer
        return [await h for h in held], run.phase, run.settled

    answers, phase, settled = asyncio.run(go())
    assert [a.body for a in answers] == [w.EMPTY_APPEND_RESPONSE] * 2
    assert phase == "local" and settled


def test_to_origin_forwards_what_was_held_in_seqno_order() -> None:
    async def go() -> tuple[list[bytes], list[bytes], str]:
        origin = Origin()
        run = _run(Adapter())
        held = [run.hold(n, _append(origin, b"m%d" % n)) for n in (2, 0, 1)]
        await run.to_origin()
        return origin.sent, [(await h).body for h in held], run.phase

    sent, answers, phase = asyncio.run(go())
    assert sent == [b"m0", b"m1", b"m2"]
    assert answers == [b"cursor: m2", b"cursor: m0", b"cursor: m1"]
    assert phase == "origin"


def test_a_local_run_whose_stream_never_opens_is_recorded_abandoned_once() -> None:
    async def go() -> tuple[Run, HttpResponse, Adapter]:
        adapter = Adapter()
        run = _run(adapter)
        held = run.hold(0, _append(Origin(), b"m0"))
        run.decide("conv", OPENED)
        producer = asyncio.get_running_loop().create_task(asyncio.sleep(60))
        run.local("hi", producer)
        await run.abandon_unless_streamed(0.01)
        assert producer.cancelled()
        run.close_local(200, 0.0, complete=True)  # a late end records nothing more
        return run, await held, adapter

    run, answer, adapter = asyncio.run(go())
    assert run.phase == "abandoned" and run.abandoned
    assert answer.body == w.EMPTY_APPEND_RESPONSE
    [served] = adapter.closed
    assert (served.status, served.end) == (ABANDONED, "abandoned")
    assert not served.complete and not served.answered


def test_a_streamed_run_is_not_abandoned() -> None:
    async def go() -> Adapter:
        adapter = Adapter()
        run = _run(adapter)
        run.decide("conv", OPENED)
        run.streaming()
        await run.abandon_unless_streamed(0.01)
        return adapter

    assert asyncio.run(go()).closed == []


def test_an_outcome_at_cursor_is_recorded_once_with_its_fallback() -> None:
    adapter = Adapter()
    outcome = Outcome(adapter, OPENED)
    outcome.fell_back("ollama")
    end = outcome.origin_end()
    end(200, True, 5.0)
    end(502, False, 9.0)
    outcome.abandoned_at_origin(1.0)
    [served] = adapter.closed
    assert (served.status, served.complete, served.fallback_from) == (200, True, "ollama")


class Loop:
    input_tokens = 120
    output_tokens = 0


def test_the_agent_loops_token_counts_are_the_answers_once_it_ended() -> None:
    adapter = Adapter()
    run = _run(adapter)
    run.decide("conv", OPENED)
    run.looping(Loop())
    assert run.tokens() == (None, None)
    run.loop_ended()
    assert run.tokens() == (120, None)  # a count of 0 is none: the backend's stream says
    run.close_local(200, 0.0, complete=True)
    [served] = adapter.closed
    assert (served.input_tokens, served.output_tokens, served.status) == (120, None, 200)
