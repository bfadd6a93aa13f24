"""ReplyTap: the tool calls a reply issued, read from the bytes the client receives, cut anywhere."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fake_wire import Plan, anthropic_events, anthropic_json, chat_events, chat_json
from fake_wire_responses import responses_events, responses_json
from glider_cli.turns.sticky import ReplyTap, whole_reply_calls

ARGS = {"description": "find yaml users", "prompt": "List the modules that import yaml."}


def plan(protocol: str, tool: str | None = "Agent") -> Plan:
    return Plan(protocol, "m", "Using a tool.", tool, ARGS if tool else {}, None, (10, 5), 0.0)


def tap_stream(protocol: str, events: list[bytes], cut: int) -> list[Any]:
    data = b"".join(events)
    tap = ReplyTap(protocol, True)
    for i in range(0, len(data), cut):
        tap.feed(data[i : i + cut])
    return tap.close()


@pytest.mark.parametrize("cut", [1, 7, 4096])
@pytest.mark.parametrize(
    ("protocol", "events", "prefix"),
    [
        ("anthropic", lambda p: anthropic_events(p), "toolu_"),
        ("openai_chat", lambda p: chat_events(p, True), "call_"),
        ("openai_responses", lambda p: responses_events(p), "call_"),
    ],
)
def test_streamed_tool_calls_are_found_with_their_arguments(
    protocol: str, events: Any, prefix: str, cut: int
) -> None:
    calls = tap_stream(protocol, events(plan(protocol)), cut)
    assert len(calls) == 1
    assert calls[0].id.startswith(prefix) and calls[0].name == "Agent"
    assert dict(calls[0].arguments) == ARGS


@pytest.mark.parametrize(
    ("protocol", "events"),
    [
        ("anthropic", lambda p: anthropic_events(p)),
        ("openai_chat", lambda p: chat_events(p, True)),
        ("openai_responses", lambda p: responses_events(p)),
    ],
)
def test_a_text_reply_issues_no_call(protocol: str, events: Any) -> None:
    assert tap_stream(protocol, events(plan(protocol, None)), 13) == []


@pytest.mark.parametrize(
    ("protocol", "body"),
    [("anthropic", anthropic_json), ("openai_chat", chat_json), ("openai_responses", responses_json)],
)
def test_whole_replies(protocol: str, body: Any) -> None:
    reply = body(plan(protocol))
    calls = whole_reply_calls(protocol, reply)
    assert [(c.name, dict(c.arguments)) for c in calls] == [("Agent", ARGS)]
    tap = ReplyTap(protocol, False)
    raw = json.dumps(reply).encode()
    tap.feed(raw[:10])
    tap.feed(raw[10:])
    assert [c.id for c in tap.close()] == [c.id for c in calls]
    assert whole_reply_calls(protocol, {"unexpected": True}) == []


def test_crlf_framing_and_an_unterminated_last_event() -> None:
    events = anthropic_events(plan("anthropic"))
    data = b"".join(events).replace(b"\n", b"\r\n")
    calls = tap_stream("anthropic", [data], 5)
    assert [(c.name, dict(c.arguments)) for c in calls] == [("Agent", ARGS)]
    # A Responses stream whose last event lacks its blank line still yields the call.
    raw = b"".join(responses_events(plan("openai_responses"))).rstrip(b"\n")
    assert [c.name for c in tap_stream("openai_responses", [raw], 4096)] == ["Agent"]


def test_the_tap_lives_in_reply_tap_and_is_importable_from_sticky() -> None:
    from glider_cli.protocol import reply_tap
    from glider_cli.turns import sticky

    assert sticky.ReplyTap is reply_tap.ReplyTap and sticky.IssuedCall is reply_tap.IssuedCall
    assert sticky.whole_reply_calls is reply_tap.whole_reply_calls
