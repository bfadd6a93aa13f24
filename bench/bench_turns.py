"""Turn lifecycle micro-benchmark (issue 29): `Turns.open` + `Turns.close` as the proxy calls them.

Per request, what `proxy.engine` and `proxy.dispatch` do around the turn core: `awaited_prompt`
(the title wait is on by default), `open`, `prompt_key` for a new turn, the opening events made as
the event writer makes them, a `Served` and `close`, and the closing events. The router is a
stand-in returning a fixed decision, and its `RouteDecided` record is not made (both are the
router's cost, `bench_router.py`), so the figure is the turn core's own (with what it calls of
`protocol`: the credentials fingerprint, the request-kind tests, the turn keys of `TurnOpened`).
Every request is parsed beforehand (one ChatRequest per request, as the server parses each); the
time is CPU µs per request (process time: other processes on the machine do not count):

    bench         the bench_proxy.py request: Anthropic "/cloud say hi", no session id, a new turn each
    bench-steady  the same with the index full (4096 families, as in `glider serve` after bench_proxy's
                  warm-up: every request opens a family and evicts the least recently seen one)
    cc-first      Claude Code's first turn (tests/fixtures/clients/claude-code-01), a new prompt each
                  time in one session
    cc-steady     the same with the index full (4096 families: a long-running server, every new turn
                  evicts the least recently seen family)
    cc-tool-loop  Claude Code's prompt whose reply issues a Bash call, then the tool-result follow-up
                  (claude-code-02; both requests counted)

Usage:
    .venv/bin/python bench/bench_turns.py [--n 4000]           # this tree (or PYTHONPATH's)
    .venv/bin/python bench/bench_turns.py --against OTHER/src   # both trees, interleaved, and the ratio
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures" / "clients"
BODY = {"model": "claude-bench", "max_tokens": 16, "messages": [{"role": "user", "content": "/cloud say hi"}]}
HEADERS = {"content-type": "application/json", "x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}
SCENARIOS = ("bench", "bench-steady", "cc-first", "cc-steady", "cc-tool-loop")


def _fixture(name: str, seq: int) -> tuple[dict[str, Any], dict[str, str]]:
    data = json.loads((FIXTURES / name).read_text())
    req = data["requests"][seq]
    headers = {k.lower(): v for k, v in req["headers"]}
    headers["x-api-key"] = "sk-bench-key"
    return req["body"], headers


def _start() -> float:
    """The clock at the start of a timed loop. The requests parsed for it (alive all along here, not
    in a server) are moved out of the garbage collector's sight, so its passes cost what they would."""
    gc.collect()
    gc.freeze()
    return time.process_time()


def _run(n: int) -> dict[str, float]:
    from glider_cli.config.settings import StickySettings, ToolFollowupSettings
    from glider_cli.domain import Deferred, Reason, RequestSummary, RouteDecision
    from glider_cli.protocol.parse import parse_request
    from glider_cli.protocol.reply_tap import IssuedCall
    from glider_cli.store.eventlog.events import ROUTE_DECIDED, IdGenerator
    from glider_cli.turns.lifecycle import Served, Turns

    def decision(command: str | None) -> RouteDecision:
        return RouteDecision(
            target="cloud",
            rule="explicit-cloud" if command else "default",
            priority=100,
            backend="origin",
            model=None,
            adapter=None,
            strategy="single",
            delegate=None,
            request=RequestSummary(10, False, 0, "keywords"),
            trace=(Reason("explicit-cloud", 100, True, "matched"),),
            command=command,
        )

    class Fixed:
        def __init__(self, d: RouteDecision) -> None:
            self.d = d

        def decide(self, request: Any, *, sticky: Any = None, gate: Any = None, every: bool = False) -> Any:
            return self.d

    def made(events: Any) -> None:  # what the event writer reads (a Deferred is made then)
        for kind, data, _tid in events:
            if kind != ROUTE_DECIDED and isinstance(data, Deferred):
                data.resolve()

    def one(turns: Turns, chat: Any, body: Any, served: Served) -> None:
        turns.awaited_prompt(chat, body)
        opened = turns.open(chat, body)
        if opened.new_turn:
            turns.prompt_key(opened)
        made(opened.events)
        made(turns.close(opened, served))

    def new_turns(decider: Fixed) -> Turns:
        return Turns(decider, StickySettings(), ToolFollowupSettings(), clock=time.time, new_id=IdGenerator())

    out: dict[str, float] = {}
    ok = Served("origin", "cloud", "claude-bench", 200, 12, 5, ms=3.0, text_bytes=400)

    # bench: the bench_proxy request, a new turn each time
    chats = [parse_request("anthropic", BODY, HEADERS, lowered=True) for _ in range(n)]
    turns = new_turns(Fixed(decision("/cloud")))
    t0 = _start()
    for chat in chats:
        one(turns, chat, BODY, ok)
    out["bench"] = (time.process_time() - t0) / n * 1e6

    # bench-steady: the same with the index full (each new family evicts the oldest)
    turns = new_turns(Fixed(decision("/cloud")))
    for _ in range(4096):
        one(turns, parse_request("anthropic", BODY, HEADERS, lowered=True), BODY, ok)
    chats = [parse_request("anthropic", BODY, HEADERS, lowered=True) for _ in range(n)]
    t0 = _start()
    for chat in chats:
        one(turns, chat, BODY, ok)
    out["bench-steady"] = (time.process_time() - t0) / n * 1e6

    # cc-first: Claude Code's first turn, a new prompt each time (one session)
    body, headers = _fixture("claude-code-01-first-turn.json", 0)

    def prompt(i: int) -> dict[str, Any]:
        messages = json.loads(json.dumps(body["messages"]))
        messages[0]["content"][-1]["text"] = f"prompt number {i}: explain the parser"
        return dict(body, messages=messages)

    bodies = [prompt(i) for i in range(n)]
    chats = [parse_request("anthropic", b, headers, lowered=True) for b in bodies]
    turns = new_turns(Fixed(decision(None)))
    t0 = _start()
    for chat, b in zip(chats, bodies, strict=True):
        one(turns, chat, b, ok)
    out["cc-first"] = (time.process_time() - t0) / n * 1e6

    # cc-steady: the same with the index full
    turns = new_turns(Fixed(decision(None)))
    for i in range(4096):
        one(turns, parse_request("anthropic", prompt(-i - 1), headers, lowered=True), body, ok)
    chats = [parse_request("anthropic", b, headers, lowered=True) for b in bodies]
    t0 = _start()
    for chat, b in zip(chats, bodies, strict=True):
        one(turns, chat, b, ok)
    out["cc-steady"] = (time.process_time() - t0) / n * 1e6

    # cc-tool-loop: the prompt (its reply issues a Bash call), then the tool result
    body1, headers1 = _fixture("claude-code-02-tool-use-followup.json", 0)
    body2, headers2 = _fixture("claude-code-02-tool-use-followup.json", 1)
    use = next(b for b in body2["messages"][2]["content"] if b.get("type") == "tool_use")
    call = IssuedCall(use["id"], use["name"], use["input"])
    issued = Served("origin", "cloud", "claude-bench", 200, 12, 5, ms=3.0, calls=(call,), text_bytes=900)
    half = max(1, n // 2)
    pairs = [
        (
            parse_request("anthropic", body1, headers1, lowered=True),
            parse_request("anthropic", body2, headers2, lowered=True),
        )
        for _ in range(half)
    ]
    turns = new_turns(Fixed(decision(None)))
    t0 = _start()
    for first, follow in pairs:
        one(turns, first, body1, issued)
        one(turns, follow, body2, ok)
    out["cc-tool-loop"] = (time.process_time() - t0) / (2 * half) * 1e6
    return out


def _child(src: str, n: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=src)
    cmd = [sys.executable, __file__, "--n", str(n), "--json"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=4000, help="requests per scenario")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--against", help="another tree's src: run both, interleaved, and print the ratio")
    ap.add_argument("--rounds", type=int, default=7, help="with --against: runs of each tree")
    args = ap.parse_args()
    if args.against is None:
        _run(min(args.n, 500))  # warm-up: imports, caches
        figures = _run(args.n)
        if args.json:
            print(json.dumps(figures))
        else:
            for name in SCENARIOS:
                print(f"{name:14} {figures[name]:8.1f} µs/request")
        return
    ours = str(HERE.parent / "src")
    runs: dict[str, list[dict[str, float]]] = {"base": [], "ours": []}
    for _ in range(args.rounds):
        runs["base"].append(_child(args.against, args.n))
        runs["ours"].append(_child(ours, args.n))
    print(f"µs per request, median of {args.rounds} interleaved runs of {args.n} requests")
    print(f"{'scenario':14} {'base':>8} {'ours':>8} {'ours/base':>10}")
    for name in SCENARIOS:
        base = statistics.median(r[name] for r in runs["base"])
        mine = statistics.median(r[name] for r in runs["ours"])
        print(f"{name:14} {base:8.1f} {mine:8.1f} {mine / base:10.2f}")


if __name__ == "__main__":
    main()
