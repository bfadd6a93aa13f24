"""Decisions on a fixed set of requests, as plain data: the golden the router's output is held to.

`records()` decides every case (the bundled profiles, a config with the complexity rule on; typed
commands, quoted and back-ticked ones, delegate flags, classifier patterns, the bundled scripts,
context sizes, tools, a capability gate, `every=True`; the captured client fixtures run through the
turn lifecycle, so sticky views, held families and follow-ons are in it too) and returns, per case,
the decision's explain view (`to_dict`), its logged record (`to_record`), or the error it raised.

The golden file (`tests/fixtures/router/decisions.json.gz`, gzipped JSON) was written by this
module running on the router's code before its decision path was reworked for speed (issue 29):

    PYTHONPATH=<old checkout>/src:tests:tests/router python tests/router/golden_decisions.py
"""

from __future__ import annotations

import gzip
import itertools
import json
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import glider_cli
from glider_cli.config.load import load_config
from glider_cli.config.model import Config
from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import ChatRequest
from glider_cli.errors import GliderError
from glider_cli.protocol.parse import parse_request
from glider_cli.router import Router
from glider_cli.turns.lifecycle import Turns
from routing_helpers import message

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "clients"
PROTOCOLS = {
    "/v1/messages": "anthropic",
    "/v1/messages/count_tokens": "anthropic",
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
}

TEXTS = [
    "hello",
    "",
    "/local fix it",
    "say hi /fast",
    "/localhost is down",
    "please /cloud this",
    "/heavy: design the module",
    'the "/local" command',
    "use `/local` to go local",
    "> /cloud quoted\nand more",
    "```\n/local\n```\nnothing typed",
    "/claude take over",
    "hand it to /cursor-agent please",
    "/local and /cloud both",
    "summarize the conversation so far",
    "Please write a short summary of the changes you made",
    "design a system for billing",
    "find the root cause of this deadlock",
    "fix the typo in the README",
    "explain this function",
    "thanks",
    "fix the typo " + "x" * 2100,
    "please refactor this",
    "RENAME the helper",
    "/swarm build it",
    "do it [fanout] now",
    "[fanout] and refactor",
    "Pourquoi le cache échoue-t-il ? İstanbul ΟΔΟΣ",
    "word " * 7000,
    "x" * 40000,
    "refactor src/app.py and tests/test_app.py, README.md\n```py\nx = 1\n```\n```\ny\n```",
    "a complex, tricky migration: optimize the concurrency and security of the architecture",
    "<system-reminder>/local</system-reminder> nothing here",
    "<system-reminder>hint</system-reminder>/local go",
]

USER = "Can you look at how the session cache handles expiry when two workers write at the same moment? {i}"
ASSISTANT = (
    "The cache stores each entry with a timestamp and the worker id. When two workers write, the later "
    "write wins, and the expiry check compares the stored timestamp with the current time minus the TTL. "
    "I looked at the code path in the store module and the helper that computes the key. The helper "
    "lowercases the session id and joins it with the tenant name, which is fine. Step {i} is done. "
)


def bench_request(*, user: str = USER, assistant: str = ASSISTANT, scale: int = 1) -> ChatRequest:
    """The router bench's typical request (bench/bench_router.py), and its variants."""
    messages: list[dict[str, Any]] = []
    for i in range(10):
        messages.append({"role": "user", "content": user.format(i=i) * scale})
        messages.append({"role": "assistant", "content": assistant.format(i=i) * scale})
    messages.append({"role": "user", "content": "Good. Where should we look next in that area?"})
    body = {
        "model": "claude-sonnet-5-5",
        "system": "You are a coding agent. " * 130,
        "messages": messages[-20:],
        "max_tokens": 4096,
        "stream": True,
    }
    return parse_request("anthropic", body)


def requests() -> list[tuple[str, ChatRequest]]:
    out = [(f"text {i}", message(t)) for i, t in enumerate(TEXTS)]
    out += [(f"tools {i}", message(t, tools=True)) for i, t in enumerate(TEXTS[:6])]
    out.append(("temperature", message("refactor this", tools=True, temperature=0.2, max_tokens=99)))
    out.append(
        (
            "history",
            message(
                "now", history=[{"role": "user", "content": "/swarm"}, {"role": "assistant", "content": "ok"}]
            ),
        )
    )
    out.append(("bench typical", bench_request()))
    out.append(
        (
            "bench non-ASCII",
            bench_request(
                user="Pourquoi le cache échoue-t-il ? {i} ",
                assistant="Réponse détaillée : ça dépend. {i} " * 12,
            ),
        )
    )
    out.append(("bench heavy", bench_request(scale=7)))
    for path in sorted(FIXTURES.glob("*.json")):
        for n, r in enumerate(json.loads(path.read_text())["requests"]):
            if r["path"] in PROTOCOLS and isinstance(r.get("body"), dict):
                out.append((f"{path.stem} {n}", parse_request(PROTOCOLS[r["path"]], r["body"])))
    return out


def configs(tmp: Path) -> list[tuple[str, Config]]:
    out = [(p, load_config(profile=p)) for p in ("default", "local-first", "pure-local")]
    path = tmp / "complexity.yaml"
    path.write_text(
        "extends: default\nrouting:\n  complexity:\n    enabled: true\n    cloud_above: 20\n"
        "    keywords: [migration, concurrency, 'security review', optimize, tricky]\n",
        encoding="utf-8",
    )
    out.append(("complexity on", load_config(config=str(path))))
    return out


def _outcome(router: Router, req: ChatRequest, **kwargs: Any) -> dict[str, Any]:
    try:
        d = router.decide(req, **kwargs)
    except GliderError as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    return {"dict": d.to_dict(), "record": d.to_record()}


def _too_small(backend: str | None) -> str | None:
    return f"{backend} has a 4096-token window"


def records() -> dict[str, Any]:
    """Every case's outcome, as JSON data; the checkout's and the temporary config's directories in
    a rule's `where` are written `<root>` and `<tmp>`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = _records(Path(tmp))
        text = json.dumps(out, sort_keys=True, ensure_ascii=False)
        root = Path(glider_cli.__file__).resolve().parents[2]
        for path, name in ((Path(tmp).resolve(), "<tmp>"), (Path(tmp), "<tmp>"), (root, "<root>")):
            text = text.replace(json.dumps(str(path))[1:-1], name)
    data: dict[str, Any] = json.loads(text)
    return data


def _records(tmp: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cname, config in configs(tmp):
        router = Router(config)
        for rname, req in requests():
            key = f"{cname} | {rname}"
            out[key] = _outcome(router, req)
            out[key + " | every"] = _outcome(router, req, every=True)
            out[key + " | gate"] = _outcome(router, req, gate=_too_small)
        # The captured sessions through the turn lifecycle: sticky views, families, follow-ons.
        for path in sorted(FIXTURES.glob("*.json")):
            turns = Turns(
                router,
                StickySettings(),
                ToolFollowupSettings(),
                clock=lambda: 0.0,
                new_id=partial(next, (f"t{i}" for i in itertools.count())),
            )
            for n, r in enumerate(json.loads(path.read_text())["requests"]):
                if r["path"] not in PROTOCOLS or not isinstance(r.get("body"), dict):
                    continue
                chat = parse_request(PROTOCOLS[r["path"]], r["body"])
                count = r["path"].endswith("count_tokens")
                key = f"{cname} | turns {path.stem} {n}"
                try:
                    opened = turns.open(chat, r["body"], count_tokens=count)
                except GliderError as exc:
                    out[key] = {"error": type(exc).__name__, "message": str(exc)}
                    continue
                out[key] = {
                    "dict": opened.decision.to_dict(),
                    "record": opened.decision.to_record(),
                    # The logged event's data is the record, made when it is written.
                    "events": [
                        dict(d) == opened.decision.to_record()
                        for kind, d, _ in opened.events
                        if kind == "RouteDecided"
                    ],
                }
    return out


GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "router" / "decisions.json.gz"


def dump(data: dict[str, Any]) -> bytes:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return gzip.compress(text.encode(), mtime=0)


if __name__ == "__main__":
    GOLDEN.write_bytes(dump(records()))
    print(f"wrote {GOLDEN.name}", file=sys.stderr)
