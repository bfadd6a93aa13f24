"""A generated GLIDER_HOME with weeks of Claude Code traffic, in the project's own event format.

`generate(home, events=200_000, days=14)` drives the real core the way `glider serve` does (the
default profile's Router, `turns.lifecycle.Turns`, the `EventWriter` batch path with its index hook),
one turn after another spread over `days` UTC days ending today: each turn a user message (with
Claude Code's `<system-reminder>` blocks), then tool round trips (Bash, Read, Edit, TodoWrite) until
the reply is plain text; now and then a Note or a DelegateRun. The entity store gets this repository's
`src/` (index-tree and index-symbols), as a user who indexed their project has. Deterministic (a seeded
random). Used by bench/bench_store_scale.py; run it alone to make a home to try commands on:

    .venv/bin/python bench/store_scale_home.py DIR [--events N] [--days D]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from pathlib import Path
from typing import Any

from glider_cli.config.load import load_config
from glider_cli.domain import Deferred
from glider_cli.paths import Paths
from glider_cli.protocol.parse import parse_request
from glider_cli.protocol.reply_tap import IssuedCall
from glider_cli.router import Router
from glider_cli.store.context_store import ContextStore
from glider_cli.store.eventlog.writer import EventWriter
from glider_cli.turns.lifecycle import Served, Turns

REPO = Path(__file__).resolve().parent.parent
_VOCAB = """parser lexer token stream router sticky family cache index graph query store writer prune
retention delegate compaction ranking summary episode backend fallback timeout retry budget schema
config profile rule trigger script sandbox dashboard session workspace test fixture flaky failing
slow memory latency refactor rename split module docs readme changelog"""
WORDS = tuple(_VOCAB.split())
TOOLS = [
    {"name": n, "input_schema": {"type": "object"}}
    for n in ("Bash", "Read", "Edit", "Write", "TodoWrite", "Agent")
]
REMINDER = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
    "# gitStatus\nCurrent branch: main\nStatus:\nM src/app.py\n</system-reminder>"
)


def _ask(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 16)))


def _call(rng: random.Random, n: int, cwd: str) -> IssuedCall:
    name = rng.choice(("Bash", "Read", "Edit", "Edit", "TodoWrite", "Bash"))
    cid = f"toolu_{n:012d}"
    if name == "Bash":
        return IssuedCall(cid, name, {"command": f"pytest -q tests/test_{rng.choice(WORDS)}.py"})
    if name == "Read":
        return IssuedCall(cid, name, {"file_path": f"{cwd}/src/{rng.choice(WORDS)}.py"})
    if name == "Edit":
        path = f"{cwd}/src/glider_cli/store/{rng.choice(WORDS)}.py"
        return IssuedCall(cid, name, {"file_path": path, "old_string": "a", "new_string": "b"})
    todos = [
        {"content": _ask(rng), "status": rng.choice(("pending", "in_progress", "completed"))}
        for _ in range(4)
    ]
    return IssuedCall(cid, name, {"todos": todos})


def _body(session: str, cwd: str, ask: str, pairs: list[tuple[IssuedCall, str]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": REMINDER}, {"type": "text", "text": ask}]},
        {"role": "system", "content": f"# Environment\n - Primary working directory: {cwd}\n"},
    ]
    for call, result in pairs[-3:]:  # the recent round trips are enough to place the request
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call.id, "name": call.name, "input": {}}],
            }
        )
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": result}]}
        )
    return {
        "model": "claude-opus-5-5",
        "messages": messages,
        "tools": TOOLS,
        "stream": True,
        "max_tokens": 32000,
    }


def generate(home: Path, events: int = 200_000, days: int = 14, seed: int = 7) -> dict[str, Any]:
    """Write the home (see the module contract); returns what was made."""
    rng = random.Random(seed)
    paths = Paths(home=home)
    config = load_config(profile="default", environ={})
    now = [0.0]
    ids = iter(range(10**9))
    turns = Turns(
        Router(config),
        config.settings.sticky,
        config.settings.tool_followup,
        clock=lambda: now[0],
        new_id=lambda: f"turn-{next(ids):07d}",
    )
    writer = EventWriter(paths, config.settings.context, clock=lambda: now[0])
    today = dt.datetime.now(dt.UTC).date()
    start = dt.datetime.combine(today - dt.timedelta(days=days - 1), dt.time(0), dt.UTC).timestamp()
    span = (dt.datetime.now(dt.UTC).timestamp() - 60) - start
    written = n_turns = calls = 0
    t0 = time.perf_counter()
    sessions = [(f"sess-{i:04d}", f"/home/dev/project{i % 3}") for i in range(40)]
    while written < events:
        session, cwd = rng.choice(sessions)
        now[0] = start + span * written / events
        ask = _ask(rng)
        pairs: list[tuple[IssuedCall, str]] = []
        n_turns += 1
        for step in range(rng.randint(1, 14)):
            body = _body(session, cwd, ask, pairs)
            headers = {
                "x-claude-code-session-id": session,
                "user-agent": "claude-cli/2.1.332 (external, cli)",
            }
            chat = parse_request("anthropic", body, headers)
            opened = turns.open(chat, body)
            batch = [(k, d.resolve() if isinstance(d, Deferred) else d, t) for k, d, t in opened.events]
            last = step > 0 and rng.random() < 0.2
            issued = [] if last else [_call(rng, calls, cwd)]
            calls += len(issued)
            served = Served(
                "origin",
                "cloud",
                None,
                200,
                input_tokens=rng.randint(2000, 90000),
                output_tokens=rng.randint(20, 2000),
                ms=rng.uniform(400, 9000),
                calls=issued,
            )
            batch += list(turns.close(opened, served))
            if rng.random() < 0.003 and opened.turn_id:
                batch.append(("Note", {"text": f"remember: {_ask(rng)}"}, opened.turn_id))
            if rng.random() < 0.002 and opened.turn_id:
                data = {"vendor": "agy", "exit_code": 0, "ms": 41000, "summary": _ask(rng), "workspace": cwd}
                data["files"] = [f"src/glider_cli/store/{rng.choice(WORDS)}.py"]
                batch.append(("DelegateRun", data, opened.turn_id))
            writer.write_now(batch)
            written += len(batch)
            now[0] += rng.uniform(2, 40)
            if last:
                break
            pairs += [(c, "ok " + _ask(rng)) for c in issued]
    writer.close()
    store = ContextStore(paths)
    store.index_tree(REPO / "src")
    store.index_symbols(REPO / "src")
    return {"events": written, "turns": n_turns, "days": days, "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("home", type=Path)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--days", type=int, default=14)
    args = ap.parse_args()
    print(generate(args.home, args.events, args.days), file=sys.stderr)


if __name__ == "__main__":
    main()
