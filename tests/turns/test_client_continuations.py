"""Continuations a client sends on its own (Claude Code's `Output token limit hit…`, Gemini CLI's `Please
continue.`, Codex's goal continuation) join the turn they continue; a person's own words never do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from family_helpers import Ids, cc, codex, codex_user, user
from glider_cli.protocol.parse import parse_request
from glider_cli.turns.client_texts import CONTINUATIONS, client_continuation, without_nudge
from glider_cli.turns.families import FamilyIndex
from routing_helpers import config_with_rules
from turns.test_sticky import RULES, S1, Harness

MAX_TOKENS = (
    "Output token limit hit. Resume directly \u2014 no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. Break remaining work into smaller pieces."
)
REMINDER = "<system-reminder>\nThe date has changed.\n</system-reminder>\n"


def _cut_short(prompt: str, follow: str) -> list[dict[str, Any]]:
    return [user(prompt), {"role": "assistant", "content": "Here is the start of"}, user(follow)]


def _blocks(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


@pytest.mark.parametrize(
    "last", [user(MAX_TOKENS), _blocks(REMINDER, MAX_TOKENS), _blocks(MAX_TOKENS, REMINDER)]
)
def test_claude_codes_max_tokens_continuation_joins_the_turn_it_continues(last: dict[str, Any]) -> None:
    ix = FamilyIndex(Ids())
    r1, b1 = cc(S1, [user("write the parser")])
    assert ix.place(r1, 0.0, body=b1).kind == "new_turn"
    r2, b2 = cc(S1, [*_cut_short("write the parser", "x")[:2], last])
    p = ix.place(r2, 1.0, body=b2)
    assert (p.kind, p.turn_id, p.new_turn) == ("continuation", "t1", False)
    assert p.link.startswith("Claude Code's own continuation (after a reply that stopped at max_tokens")


@pytest.mark.parametrize(
    "text",
    [
        "please continue",
        "Continue.",
        "Output token limit hit. Resume directly, please.",
        MAX_TOKENS + " Also fix the lexer.",
        "Please continue. And add tests.",
    ],
)
def test_a_persons_own_words_open_a_turn_even_when_they_look_alike(text: str) -> None:
    ix = FamilyIndex(Ids())
    ix.place(cc(S1, [user("write the parser")])[0], 0.0)
    p = ix.place(cc(S1, _cut_short("write the parser", text))[0], 1.0)
    assert (p.kind, p.turn_id) == ("new_turn", "t2")


def test_every_listed_text_is_recognised_and_templates_need_their_fixed_parts() -> None:
    for entry in CONTINUATIONS:
        sample = "".join(p + "x" for p in entry.parts[:-1]) + entry.parts[-1]
        assert client_continuation(sample) is entry, entry.when
    loop = next(e for e in CONTINUATIONS if "loop" in e.when)
    assert client_continuation(loop.parts[0] + "repeated tool calls") is None  # the rest is missing
    assert client_continuation("Stop hook feedback:\nrun the tests first") is not None
    assert client_continuation("stop hook feedback: run the tests") is None


def _gemini(contents: list[dict[str, Any]]) -> Any:
    body = {"contents": contents, "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}]}
    return parse_request("gemini", body, {})


def _g(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def test_gemini_clis_please_continue_and_its_nudged_retry_stay_in_the_turn() -> None:
    ix = FamilyIndex(Ids())
    ctx = _g("user", "<session_context>This is the Gemini CLI.</session_context>")
    first = [ctx, _g("user", "explain the parser")]
    assert ix.place(_gemini(first), 0.0).kind == "new_turn"
    going_on = [*first, _g("model", "The parser reads"), _g("user", "Please continue.")]
    p = ix.place(_gemini(going_on), 1.0)
    assert (p.kind, p.turn_id) == ("continuation", "t1") and "Gemini CLI" in p.link
    nudge = (
        "[System: You previously returned an empty response with no text or thoughts. Please ensure "
        "you provide your final answer or call a tool now.]"
    )
    retried = [ctx, {"role": "user", "parts": [{"text": "explain the parser"}, {"text": "\n" + nudge}]}]
    p2 = ix.place(_gemini(retried), 2.0)
    assert (p2.kind, p2.turn_id) == ("retry", "t1")
    assert without_nudge("explain the parser\n\n" + nudge) == "explain the parser"


def test_codexs_goal_continuation_joins_the_turn() -> None:
    ix = FamilyIndex(Ids())
    ix.place(codex(S1, [codex_user("make the build green")]), 0.0)
    goal = next(e for e in CONTINUATIONS if e.client == "Codex" and "goes on" in e.when)
    text = goal.parts[0] + "- This goal persists across turns.\n\nBudget:\n- Tokens used: 1200\n"
    p = ix.place(codex(S1, [codex_user("make the build green"), codex_user(text)]), 1.0)
    assert (p.kind, p.turn_id) == ("continuation", "t1")


def test_the_continuation_of_a_local_turn_is_held_local(tmp_path: Path) -> None:
    h = Harness(config_with_rules(tmp_path, RULES))
    _, d1 = h.route(cc(S1, [user("write the parser /local")])[0])
    assert (d1.target, d1.rule) == ("local", "explicit_local")
    # Long enough that big_cloud (> 2000 tokens) would take a new turn to the cloud.
    prompt = "write the parser /local"
    history = [user(prompt), {"role": "assistant", "content": "Here is " + "the parser code " * 700}]
    plan, d2 = h.route(cc(S1, [*history, user(MAX_TOKENS)])[0])
    placed = (plan.placement.kind, plan.turn_id, d2.target, d2.rule)
    assert placed == ("continuation", "t1", "local", "sticky")
    assert "held local" in d2.trace[0].reason
    assert "TurnOpened" not in [t for t, _, turn in h.events if turn != "t1"]


def test_the_pack_of_a_continuation_carries_the_turn_it_continues() -> None:
    from glider_cli.config.settings import TransformSettings
    from glider_cli.turns.pack import pack

    history = [
        user("earlier question"),
        {"role": "assistant", "content": "earlier answer"},
        user("write the parser /local"),
        {"role": "assistant", "content": [{"type": "text", "text": "Here is the start of"}]},
        _blocks(MAX_TOKENS, REMINDER),
    ]
    _, body = cc(S1, history)
    out = pack("anthropic", body, TransformSettings()).body
    assert out["messages"] == history[2:]
    ctx = _g("user", "<session_context>This is the Gemini CLI.</session_context>")
    contents = [
        ctx,
        _g("user", "explain the parser"),
        _g("model", "The parser reads"),
        _g("user", "Please continue."),
    ]
    gemini = {"contents": contents, "model": "gemini-x", "stream": True}
    assert pack("gemini", gemini, TransformSettings()).body["contents"] == contents[1:]
