"""The local regret signal (turns.regret) through the real turn lifecycle and router (the default
profile), fed real captured Claude Code and Codex bodies: each kind of evidence, and the cases that
must not count (a different request, too late, a turn in between, a cloud answer)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from glider_cli.config.load import load_config
from glider_cli.errors import GateRefused
from glider_cli.protocol.parse import parse_request
from glider_cli.protocol.reply_tap import IssuedCall, ReplyTap
from glider_cli.router import Router
from glider_cli.turns.lifecycle import Opened, Served, Turns

CLIENTS = Path(__file__).resolve().parent.parent / "fixtures" / "clients"


def _capture(name: str) -> list[dict[str, Any]]:
    return json.loads((CLIENTS / name).read_text())["requests"]


def _headers(req: dict[str, Any]) -> dict[str, str]:
    h = req["headers"]
    return dict(h) if isinstance(h, dict) else {k: v for k, v in h}


def _ask(req: dict[str, Any], text: str) -> dict[str, Any]:
    """The captured request with the person's words replaced by `text` (the client's blocks kept)."""
    body = copy.deepcopy(req["body"])
    if "messages" in body:
        user = [m for m in body["messages"] if m["role"] == "user"][-1]
        user["content"][-1]["text"] = text
    else:
        user = [i for i in body["input"] if i.get("role") == "user"][-1]
        user["content"][-1]["text"] = text
    return body


def _next(body: dict[str, Any], answer: str, text: str) -> dict[str, Any]:
    """The same conversation one exchange later: the answer it got, then a new user message."""
    body = copy.deepcopy(body)
    if "messages" in body:
        body["messages"] += [
            {"role": "assistant", "content": [{"type": "text", "text": answer}]},
            {"role": "user", "content": [{"type": "text", "text": text}]},
        ]
    else:
        body["input"] += [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        ]
    return body


class Client:
    """One captured client's session: its first turn asked with other words, then new user messages
    in the same conversation, against one Turns."""

    def __init__(self, capture: str, protocol: str) -> None:
        self.req = _capture(capture)[0]
        self.protocol = protocol
        self.now = [1000.0]
        ids = iter(range(1, 10**6))
        self.turns = Turns(
            Router(load_config(profile="default")),
            load_config(profile="default").settings.sticky,
            load_config(profile="default").settings.tool_followup,
            clock=lambda: self.now[0],
            new_id=lambda: f"t{next(ids)}",
        )
        self.events: list[tuple[str, Any, str | None]] = []
        self.body: dict[str, Any] | None = None

    def open(self, text: str, **kw: Any) -> Opened:
        self.body = _ask(self.req, text) if self.body is None else _next(self.body, "Done.", text)
        body = self.body
        chat = parse_request(self.protocol, body, _headers(self.req))
        opened = self.turns.open(chat, body, **kw)
        self.events += opened.events
        return opened

    def close(self, opened: Opened, side: str = "local", **kw: Any) -> None:
        d = opened.decision
        assert d.target == side, d.trace
        backend = "ollama" if side == "local" else "origin"
        self.events += self.turns.close(
            opened, Served(backend, side, "qwen-local", kw.pop("status", 200), **kw)
        )

    def turn(self, text: str, side: str = "local", after: float = 5.0, **kw: Any) -> str:
        self.now[0] += after
        opened = self.open(text)
        self.now[0] += 3.0
        self.close(opened, side, **kw)
        assert opened.turn_id is not None
        return opened.turn_id

    def regrets(self) -> list[tuple[str | None, str, str | None, str]]:
        out = []
        for kind, data, tid in self.events:
            if kind == "LocalRegret":
                out.append((tid, data["kind"], data["later_turn"], data["evidence"]))
        return out


CLIENT_CASES = [
    ("claude-code-01-first-turn.json", "anthropic"),
    ("codex-exec-01-tool-followup.json", "openai_responses"),
]


@pytest.fixture(params=CLIENT_CASES, ids=["claude-code", "codex"])
def client(request: pytest.FixtureRequest) -> Client:
    return Client(*request.param)


def test_repeat_with_cloud_is_regret(client: Client) -> None:
    first = client.turn("/local refactor the parser to use the new lexer")
    later = client.turn("/cloud refactor the parser to use the new lexer", side="cloud", after=300)
    (regret,) = client.regrets()
    assert regret[:3] == (first, "repeat_cloud", later) and regret[3].startswith("similarity 100")
    data = next(d for k, d, _ in client.events if k == "LocalRegret")
    assert (data["rule"], data["backend"], data["model"]) == ("explicit_local", "ollama", "qwen-local")


def test_repeat_soon_without_a_command_is_regret_but_not_later(client: Client) -> None:
    first = client.turn("/local explain why the sticky test fails")
    again = client.turn("/local explain why the sticky test fails", after=30)
    assert client.regrets()[0][:3] == (first, "repeat_soon", again)
    # Asked again long after: a new request, not a verdict on the answer.
    client.turn("/local explain why the sticky test fails", after=600)
    assert len(client.regrets()) == 1


def test_interrupted_and_reasked_is_regret(client: Client) -> None:
    first = client.turn("/local write the migration for the users table", complete=False, disconnected=True)
    later = client.turn("/local write the migration for the users table please", after=20)
    assert [r[:3] for r in client.regrets()] == [(first, "interrupted", later)]


def test_a_mid_stream_failure_is_regret(client: Client) -> None:
    first = client.turn("/local rename the module", complete=False)
    assert client.regrets() == [(first, "local_error", None, "mid_stream")]


def test_a_tool_call_that_does_not_parse_is_regret(client: Client) -> None:
    tap = ReplyTap("anthropic", True)
    tap.feed(
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"input_json_delta","partial_json":"{\\"command\\": \\"ls"}}\n\n'
    )
    calls = tap.close()
    assert calls[0].malformed and calls[0].arguments == {}
    first = client.turn("/local list the files", calls=calls)
    assert client.regrets() == [(first, "local_error", None, "tool_call_parse: Bash")]
    ok = client.turn("/local list the files again", calls=[IssuedCall("toolu_2", "Bash", {"command": "ls"})])
    assert ok not in [r[0] for r in client.regrets()]


def test_a_capability_gate_refusal_of_a_local_family_is_regret(client: Client) -> None:
    first = client.turn("/local summarise the design doc")
    # The same family again (the client sends the request once more): held local, and now the local
    # backend cannot take it; the explicit rule names no fallback, so the gate refuses it.
    chat = parse_request(client.protocol, client.body, _headers(client.req))
    opened = client.turns.open(chat, client.body)
    assert opened.plan.placement.kind == "retry" and opened.turn_id == first
    with pytest.raises(GateRefused):
        client.turns.open(chat, client.body, gate=lambda backend: "needs 60,000 tokens; window 8,192")
    (regret,) = client.turns.regret.take()
    assert regret[2] == first and regret[1]["kind"] == "local_error"
    assert regret[1]["evidence"].startswith("capability_gate: ")
    assert "60,000 tokens" in regret[1]["evidence"]


def test_a_retry_of_the_same_request_is_not_a_new_turn_nor_regret(client: Client) -> None:
    client.turn("/local tidy the imports in the store module")
    chat = parse_request(client.protocol, client.body, _headers(client.req))
    client.now[0] += 5
    opened = client.turns.open(chat, client.body)
    assert not opened.new_turn
    client.events += opened.events
    assert client.regrets() == []


def test_what_is_not_regret(client: Client) -> None:
    client.turn("/local add a docstring to the parser")
    client.turn("/local now run the whole test suite twice", after=10)  # a different request
    cloud = client.turn("/cloud summarise the failing tests in detail", side="cloud")
    client.turn("/cloud summarise the failing tests in detail", side="cloud", after=10)  # not local
    a = client.turn("/local bump the version in pyproject")
    client.turn("/local fix the changelog entry for it", after=5)
    client.turn("/cloud bump the version in pyproject", side="cloud", after=5)  # a turn in between
    client.turn("/local ok", after=5)
    client.turn("/cloud ok", side="cloud", after=5)  # too short to tell
    assert client.regrets() == [] and cloud and a


def test_an_error_status_is_not_a_mid_stream_failure(client: Client) -> None:
    client.turn("/local explain the lexer", status=500, complete=False, answered=False)
    assert client.regrets() == []
