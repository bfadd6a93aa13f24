"""Turn-family index and sticky routing benchmark (issue 5). Prints each figure next to its target.

The index and the reply tap sit on every proxied request, next to the router, so they must cost a
small fraction of a routing decision (bench_router.py: p50 <= 50 us without scripts):

    place + bind + served, new turns, index full (4096 families, LRU churn)   p50 <= 20 us
    place + bind + served, a tool-result follow-on of a bound family         p50 <= 20 us
    ReplyTap over a Claude-Code-sized SSE reply (400 text deltas + a tool call) >= 100 MB/s
    rebuild of the index from a full ring (4096 logged events, ToolCallsIssued included) <= 50 ms

Usage: .venv/bin/python bench/bench_sticky.py [--n 20000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import Reason, RequestSummary, RouteDecision
from glider_cli.protocol.parse import parse_request
from glider_cli.store.eventlog.events import format_ts, make_event
from glider_cli.turns.sticky import IssuedCall, ReplyTap, Stickiness

TOOLS = [{"name": n, "input_schema": {"type": "object"}} for n in ("Agent", "Bash", "Edit", "Read", "Write")]


def decision(target: str) -> RouteDecision:
    return RouteDecision(
        target="cloud" if target == "cloud" else "local",
        rule="r",
        priority=1,
        backend="origin" if target == "cloud" else "ollama",
        model=None,
        adapter=None,
        strategy="single",
        delegate=None,
        request=RequestSummary(100, True, 0, "keywords"),
        trace=(Reason("r", 1, True, "matched"),),
    )


def body(session: str, messages: list[dict[str, object]]) -> dict[str, object]:
    meta = {"user_id": json.dumps({"device_id": "d", "account_uuid": "", "session_id": session})}
    return {"model": "m", "messages": messages, "tools": TOOLS, "metadata": meta, "stream": True}


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def bench_new_turns(n: int) -> float:
    clock = [0.0]
    ids = iter(range(10**9))
    st = Stickiness(
        StickySettings(), ToolFollowupSettings(), clock=lambda: clock[0], new_id=lambda: f"t{next(ids)}"
    )
    reqs = [
        parse_request("anthropic", body(f"s{i}", [{"role": "user", "content": f"prompt {i} /cloud"}]))
        for i in range(5000)
    ]
    cloud = decision("cloud")
    out: list[float] = []
    for i in range(n):
        req = reqs[i % len(reqs)]
        clock[0] += 0.01
        t0 = time.perf_counter()
        plan = st.place(req)
        st.bind(plan, cloud)
        st.served(plan, "cloud", "origin", None, (), complete=True)
        out.append(time.perf_counter() - t0)
    assert len(st.index) <= 4096
    return p50(out)


def bench_tool_results(n: int) -> float:
    clock = [0.0]
    ids = iter(range(10**9))
    st = Stickiness(
        StickySettings(), ToolFollowupSettings(), clock=lambda: clock[0], new_id=lambda: f"t{next(ids)}"
    )
    first = parse_request("anthropic", body("s", [{"role": "user", "content": "run the tests /cloud"}]))
    plan = st.place(first)
    st.bind(plan, decision("cloud"))
    history: list[dict[str, object]] = [{"role": "user", "content": "run the tests /cloud"}]
    reqs = []
    for i in range(200):
        cid = f"toolu_{i:04d}"
        st.served(plan, "cloud", "origin", None, [IssuedCall(cid, "Bash", {"command": "ls"})], complete=True)
        history.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": "Bash", "input": {}}]}
        )
        history.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": "ok"}]}
        )
        reqs.append(parse_request("anthropic", body("s", list(history))))
    cloud = decision("cloud")
    out: list[float] = []
    for i in range(n):
        req = reqs[i % len(reqs)]
        t0 = time.perf_counter()
        p = st.place(req)
        st.bind(p, cloud)
        st.served(p, "cloud", "origin", None, (), complete=False)
        out.append(time.perf_counter() - t0)
    return p50(out)


def sse(event: str, data: object) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def bench_tap(rounds: int) -> float:
    events = [sse("message_start", {"type": "message_start", "message": {"id": "m", "usage": {}}})]
    events.append(
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
    )
    for i in range(400):
        delta = {"type": "text_delta", "text": f"word {i} of a long and ordinary explanation "}
        events.append(sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    block = {"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {}}
    events.append(
        sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": block})
    )
    part = {"type": "input_json_delta", "partial_json": '{"command": "ls"}'}
    events.append(sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": part}))
    events.append(sse("message_stop", {"type": "message_stop"}))
    data = b"".join(events)
    chunks = [data[i : i + 1400] for i in range(0, len(data), 1400)]
    t0 = time.perf_counter()
    for _ in range(rounds):
        tap = ReplyTap("anthropic", True)
        for c in chunks:
            tap.feed(c)
        assert [c.id for c in tap.close()] == ["toolu_x"]
    return len(data) * rounds / (time.perf_counter() - t0) / 1e6


def logged_session_events(count: int) -> list[dict[str, object]]:
    """`count` events as `glider serve` logs them: turns of 4 tool round trips, one Agent call each."""
    clock = [1000.0]
    ids = iter(range(10**9))
    st = Stickiness(
        StickySettings(), ToolFollowupSettings(), clock=lambda: clock[0], new_id=lambda: f"t{next(ids)}"
    )
    out: list[dict[str, object]] = []

    def log(kind: str, data: dict[str, object], turn: str | None) -> None:
        out.append(make_event(f"{len(out):032x}", kind, format_ts(clock[0]), turn, data))

    turn = 0
    while len(out) < count:
        turn += 1
        history: list[dict[str, object]] = [{"role": "user", "content": f"task {turn} /cloud"}]
        for step in range(5):
            clock[0] += 0.5
            req = parse_request("anthropic", body(f"s{turn % 300}", list(history)))
            plan = st.place(req)
            d = decision("cloud")
            events = st.bind(plan, d)
            if plan.placement.new_turn:
                log("TurnOpened", {"ask": req.last_user_text, "session_id": req.session_id}, plan.turn_id)
            log("RouteDecided", d.to_dict(), plan.turn_id)
            cid = f"toolu_{turn}_{step}"
            name, args = ("Agent", {"prompt": f"look into part {turn}"}) if step == 0 else ("Bash", {})
            calls = [IssuedCall(cid, name, args)] if step < 4 else []
            for kind, data, tid in [*events, *st.served(plan, "cloud", "origin", None, calls, complete=True)]:
                log(kind, data, tid)
            history.append({"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": name}]})
            history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid}]})
    return out[-count:]


def counter_ids(prefix: str) -> Callable[[], str]:
    ids = iter(range(10**9))
    return lambda: f"{prefix}{next(ids)}"


def bench_rebuild(rounds: int) -> float:
    events = logged_session_events(4096)
    best = float("inf")
    for _ in range(rounds):
        st = Stickiness(StickySettings(), ToolFollowupSettings(), clock=lambda: 0.0, new_id=counter_ids("n"))
        t0 = time.perf_counter()
        st.rebuild(events)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def cpu_reference() -> float:
    """sum(range(100)) p50, to read the figures against how loaded the machine is right now."""
    out = []
    for _ in range(2000):
        t0 = time.perf_counter()
        sum(range(100))
        out.append(time.perf_counter() - t0)
    return p50(out)


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    n = ap.parse_args().n
    ref = cpu_reference()
    print(f"CPU reference: sum(range(100)) p50 {ref:.2f} us right now (about 0.8 us on an idle core)")
    a = bench_new_turns(n)
    print(f"new turns, index full (LRU churn)     p50 {a:7.2f} us    target <= 20 us    {verdict(a <= 20)}")
    b = bench_tool_results(n)
    print(f"tool-result follow-on, bound family   p50 {b:7.2f} us    target <= 20 us    {verdict(b <= 20)}")
    c = bench_tap(max(20, n // 200))
    print(f"ReplyTap, Anthropic SSE with a tool   {c:7.1f} MB/s      target >= 100 MB/s {verdict(c >= 100)}")
    r = bench_rebuild(5)
    print(f"rebuild from 4096 logged events        best {r:6.2f} ms    target <= 50 ms    {verdict(r <= 50)}")


if __name__ == "__main__":
    main()
