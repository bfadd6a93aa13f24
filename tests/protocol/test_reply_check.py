"""`turns.reply_check`: whether a reply can be used, read whole or as a stream cut anywhere; text
decides at once, a reply that opens with a tool call is decided when that call is complete."""

from __future__ import annotations

import json
from typing import Any

import pytest

from glider_cli.turns.reply_check import StreamCheck, Verdict, offered_tools, whole_verdict

SCHEMA = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
ANTHROPIC_TOOLS = {"tools": [{"name": "Read", "input_schema": SCHEMA}]}
OFFERED = offered_tools("anthropic", ANTHROPIC_TOOLS)


def sse(*events: dict[str, Any], named: bool = True) -> bytes:
    out = b""
    for e in events:
        head = f"event: {e['type']}\n" if named and "type" in e else ""
        out += (head + "data: " + json.dumps(e) + "\n\n").encode()
    return out


def run(protocol: str, stream: bytes, offered: Any = OFFERED, *, cut: int = 7) -> tuple[Verdict | None, int]:
    """The verdict and how many bytes were fed when it came (None: decided only at `close`)."""
    check = StreamCheck(protocol, offered)
    for i in range(0, len(stream), cut):
        got = check.feed(stream[i : i + cut])
        if got is not None:
            return got, i + cut
    return check.close(), -1


def anthropic_call(name: str, partial: list[str]) -> bytes:
    return sse(
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": name},
        },
        *[
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in partial
        ],
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    )


@pytest.mark.parametrize(
    ("name", "partial", "reason"),
    [
        ("Read", ['{"file_', 'path": "a"}'], None),
        ("Delete", ['{"file_path": "a"}'], "bad_tool_name"),
        ("Read", ['{"path": "a"}'], "bad_tool_args"),
        ("Read", ['{"file_path": '], "bad_tool_args"),
        ("Read", ["[1, 2]"], "bad_tool_args"),
    ],
)
def test_an_anthropic_stream_that_opens_with_a_call_is_decided_at_its_stop(
    name: str, partial: list[str], reason: str | None
) -> None:
    stream = anthropic_call(name, partial)
    verdict, at = run("anthropic", stream)
    assert verdict is not None and verdict.reason == reason
    stop = stream.index(b'"content_block_stop"')
    assert at > stop and at - 7 <= stream.index(b"\n\n", stop) + 2  # at the call's end, not the stream's


def test_visible_text_decides_at_once_and_whitespace_or_thinking_do_not() -> None:
    stream = sse(
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "\n "}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
    )
    check = StreamCheck("anthropic", OFFERED)
    first_text = stream.index(b'"Hi"')
    assert check.feed(stream[:first_text]) is None
    assert check.feed(stream[first_text:]) == Verdict(None)


@pytest.mark.parametrize(
    ("protocol", "stream"),
    [
        ("anthropic", sse({"type": "message_start", "message": {}}, {"type": "message_stop"})),
        (
            "openai_chat",
            sse({"choices": [{"delta": {"content": ""}, "finish_reason": "stop"}]}) + b"data: [DONE]\n\n",
        ),
        ("openai_responses", sse({"type": "response.created"}, {"type": "response.completed"})),
        (
            "gemini",
            sse({"candidates": [{"content": {"parts": [{"text": "", "thought": False}]}}]}, named=False),
        ),
        (
            "gemini",
            sse({"candidates": [{"content": {"parts": [{"text": "why", "thought": True}]}}]}, named=False),
        ),
    ],
)
def test_a_stream_with_neither_text_nor_a_call_is_empty(protocol: str, stream: bytes) -> None:
    verdict, at = run(protocol, stream)
    assert verdict is not None and verdict.reason == "empty_reply" and at == -1


def test_chat_calls_are_complete_at_the_next_call_or_the_finish() -> None:
    offered = offered_tools(
        "openai_chat", {"tools": [{"type": "function", "function": {"name": "Read", "parameters": SCHEMA}}]}
    )

    def call(index: int, name: str | None, args: str) -> dict[str, Any]:
        fn: dict[str, Any] = {"arguments": args}
        if name:
            fn["name"] = name
        return {
            "choices": [{"delta": {"tool_calls": [{"index": index, "function": fn}]}, "finish_reason": None}]
        }

    two = sse(call(0, "Read", '{"file_path"'), call(0, None, ': "a"}'), call(1, "Nope", "{}"), named=False)
    verdict, at = run("openai_chat", two, offered)
    assert verdict == Verdict(None) and at != -1  # the first call is checked when the second begins
    bad = sse(call(0, "Read", "{}"), {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}, named=False)
    verdict, _ = run("openai_chat", bad, offered)
    assert verdict is not None and verdict.reason == "bad_tool_args" and "file_path" in verdict.detail


def test_responses_and_gemini_calls() -> None:
    r_offered = offered_tools(
        "openai_responses", {"tools": [{"type": "function", "name": "Read", "parameters": SCHEMA}]}
    )
    item = {"type": "function_call", "name": "Read", "arguments": '{"file_path": "a"}', "call_id": "c"}
    done = sse(
        {"type": "response.output_item.added", "item": {**item, "arguments": ""}},
        {"type": "response.output_item.done", "item": item},
    )
    assert run("openai_responses", done, r_offered)[0] == Verdict(None)
    g_offered = offered_tools(
        "gemini", {"tools": [{"functionDeclarations": [{"name": "Read", "parametersJsonSchema": SCHEMA}]}]}
    )
    part = {"functionCall": {"name": "read_file", "args": {"file_path": "a"}}}
    verdict, _ = run("gemini", sse({"candidates": [{"content": {"parts": [part]}}]}, named=False), g_offered)
    assert verdict is not None and verdict.reason == "bad_tool_name"


@pytest.mark.parametrize(
    ("protocol", "body", "reason"),
    [
        ("anthropic", {"content": [{"type": "text", "text": "hi"}]}, None),
        ("anthropic", {"content": [{"type": "tool_use", "name": "Read", "input": {}}]}, "bad_tool_args"),
        ("anthropic", {"content": []}, "empty_reply"),
        (
            "openai_chat",
            {
                "choices": [
                    {
                        "message": {
                            "content": None,
                            "tool_calls": [{"function": {"name": "Read", "arguments": "{oops"}}],
                        }
                    }
                ]
            },
            "bad_tool_args",
        ),
        ("openai_chat", {"choices": [{"message": {"content": "  "}}]}, "empty_reply"),
        (
            "openai_responses",
            {"output": [{"type": "function_call", "name": "X", "arguments": "{}"}]},
            "bad_tool_name",
        ),
        (
            "openai_responses",
            {"output": [{"type": "message", "content": [{"type": "output_text", "text": "ok"}]}]},
            None,
        ),
        (
            "gemini",
            {"candidates": [{"content": {"parts": [{"text": "thinking", "thought": True}]}}]},
            "empty_reply",
        ),
        (
            "gemini",
            {
                "candidates": [
                    {"content": {"parts": [{"functionCall": {"name": "Read", "args": {"file_path": "a"}}}]}}
                ]
            },
            None,
        ),
    ],
)
def test_whole_replies(protocol: str, body: dict[str, Any], reason: str | None) -> None:
    tools: dict[str, Any] = {
        "anthropic": ANTHROPIC_TOOLS,
        "openai_chat": {"tools": [{"type": "function", "function": {"name": "Read", "parameters": SCHEMA}}]},
        "openai_responses": {"tools": [{"type": "function", "name": "Read", "parameters": SCHEMA}]},
        "gemini": {"tools": [{"functionDeclarations": [{"name": "Read", "parametersJsonSchema": SCHEMA}]}]},
    }
    assert whole_verdict(protocol, body, offered_tools(protocol, tools[protocol])).reason == reason


def test_tools_it_cannot_name_leave_unknown_names_alone() -> None:
    # Claude Code's deferred tools: callable once ToolSearch's tool_reference named them, not before.
    body: dict[str, Any] = {
        "tools": [
            {"name": "ToolSearch", "input_schema": {"type": "object"}},
            {"name": "DeferredToolPlaceholder", "defer_loading": True},
        ],
        "messages": [],
    }
    assert (
        whole_verdict(
            "anthropic",
            {"content": [{"type": "tool_use", "name": "WebFetch", "input": {}}]},
            offered_tools("anthropic", body),
        ).reason
        == "bad_tool_name"
    )
    body["messages"] = [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [{"type": "tool_reference", "tool_name": "WebFetch"}],
                }
            ],
        }
    ]
    assert whole_verdict(
        "anthropic",
        {"content": [{"type": "tool_use", "name": "WebFetch", "input": {}}]},
        offered_tools("anthropic", body),
    ).ok
    # Codex's namespace tools: their callable names are not listed flat.
    codex = offered_tools("openai_responses", {"tools": [{"type": "namespace", "name": "mcp", "tools": []}]})
    assert (
        codex.open
        and whole_verdict(
            "openai_responses",
            {"output": [{"type": "function_call", "name": "mcp__x", "arguments": "{}"}]},
            codex,
        ).ok
    )
