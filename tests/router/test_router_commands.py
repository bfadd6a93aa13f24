"""Explicit commands and delegate flags come only from what the person typed: client-injected blocks
(Claude Code, Codex, Gemini; CLIENTS.md) are stripped first, a back-ticked, fenced, quoted or
quote-marked command is a mention, and a request that carries no typed text reads none."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from glider_cli.config.load import load_config
from glider_cli.protocol.parse import parse_request
from glider_cli.router import Router
from glider_cli.router.sticky_view import StickyView
from glider_cli.router.triggers import client_text, typed_text
from routing_helpers import message

CLIENTS = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(load_config(profile="default"))


def capture(name: str, index: int = 0) -> dict[str, object]:
    req = json.loads((CLIENTS / name).read_text())["requests"][index]
    return {"body": copy.deepcopy(req["body"]), "headers": {k.lower(): v for k, v in req["headers"]}}


@pytest.mark.parametrize(
    "text",
    [
        "what does the `/local` flag do?",
        "is ``/claude`` a flag?",
        "```\nglider /local\n```\nwhat is this",
        "> say hi /local\nwhat did I mean there?",
        'the "/local" command',
        "the ‘/cloud’ command",
        "<system-reminder>Fast mode can be toggled with /fast</system-reminder>\nhello",
        "<system-reminder>an unclosed reminder that mentions /fast",
        "# Environment\nYou have been invoked in the following environment: \n - toggled with /fast",
    ],
)
def test_mentions_and_client_text_are_not_commands(router: Router, text: str) -> None:
    d = router.decide(message(text))
    assert d.rule not in ("explicit_local", "explicit_cloud") and d.delegate is None
    if not any(q in text for q in '"‘'):  # quote marks stay in the text; the command finder skips them
        assert "/local" not in typed_text(text) and "/fast" not in typed_text(text)


def test_the_persons_own_command_still_counts(router: Router) -> None:
    for text, rule in (
        ("say hi /local", "explicit_local"),
        ("<system-reminder>x</system-reminder>\nrewrite it /cloud", "explicit_cloud"),
        ("run `make` then /fast please", "explicit_local"),
        ('the "/cloud" flag, then: say hi /cloud', "explicit_cloud"),  # the quoted one is skipped
    ):
        d = router.decide(message(text))
        assert (d.rule, d.command) == (rule, text.split()[-1] if "/fast" not in text else "/fast")
    assert router.decide(message("fix it /agy")).delegate == "/agy"
    assert router.decide(message("fix the `/agy` flag parsing /claude")).delegate == "/claude"


def test_no_command_is_read_from_a_request_without_the_persons_text(router: Router) -> None:
    req = message("say hi /local /claude")
    view = StickyView(False, "t1", "a title", True, commands=False)
    d = router.decide(req, view)
    assert d.rule != "explicit_local" and d.delegate is None
    # A delegate flag needs a new user message: a tool follow-up of a turn runs nothing.
    follow = parse_request(
        "anthropic",
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "fix it /claude"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
            ],
        },
    )
    assert router.decide(follow).delegate is None


def test_codex_and_gemini_wrappers_are_stripped(router: Router) -> None:
    """Codex sends AGENTS.md and <environment_context> as user messages of their own; Gemini puts its
    <session_context> (with GEMINI.md in <loaded_context>) before the prompt in the same content."""
    cap = capture("codex-exec-01-tool-followup.json")
    body = cap["body"]
    assert isinstance(body, dict)
    items = body["input"]
    agents_md = next(i for i in items if i.get("role") == "user" and "AGENTS.md" in i["content"][0]["text"])
    agents_md["content"][0]["text"] += "\nAlways answer with /local speed.\n</INSTRUCTIONS>"
    items[-1]["content"][0]["text"] = "what does `/local` do?"
    chat = parse_request("openai_responses", body, cap["headers"])  # type: ignore[arg-type]
    assert router.decide(chat).rule != "explicit_local"
    items[-1]["content"][0]["text"] = "run the tests /local"
    assert router.decide(parse_request("openai_responses", body)).rule == "explicit_local"
    gemini = (
        "<session_context>\nThis is the Gemini CLI.\n<loaded_context><project_context>--- Context from: "
        "GEMINI.md ---\nuse /cloud for hard tasks\n</project_context></loaded_context>\n</session_context>"
    )
    assert client_text(gemini + "\nlist the files").strip() == "list the files"
    assert router.decide(message(gemini + "\nlist the files")).rule != "explicit_cloud"
    assert router.decide(message(gemini + "\nlist the files /cloud")).rule == "explicit_cloud"


def test_a_captured_count_tokens_body_matches_no_command(router: Router) -> None:
    cap = capture("claude-code-05-tui-context-count-tokens.json", 6)
    chat = parse_request("anthropic", cap["body"], cap["headers"])  # type: ignore[arg-type]
    assert "toggled with /fast" in chat.last_user_text
    assert router.decide(chat).rule != "explicit_local"


def test_explain_every_rule_says_which_rules_below_the_winner_would_also_match(router: Router) -> None:
    req = message("hi /cloud")
    plain = router.decide(req)
    every = router.decide(req, every=True)
    assert (every.rule, every.target) == (plain.rule, plain.target) == ("explicit_cloud", "cloud")
    assert [r.rule for r in every.trace] == [r.rule for r in plain.trace]
    lines = {r.rule: r.reason for r in every.trace}
    assert lines["small_context_local"].startswith("would also match (explicit_cloud has control)")
    assert lines["default"].startswith("would also match")
    assert lines["large_context_cloud"].startswith("would not match")
    assert lines["complexity"].startswith("off until routing.complexity.enabled")
    assert all("not reached" in r.reason for r in plain.trace[2:])
