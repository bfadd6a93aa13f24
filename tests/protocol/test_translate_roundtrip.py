"""Property: a conversation with tool calls survives Chat -> Anthropic -> Chat and Responses -> Anthropic
-> Chat, and every tool result still answers a call made just before it (by id, or by name for Ollama)."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from glider_cli.protocol.translate import request_to

texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12
)
names = st.sampled_from(["Bash", "Read", "exec_command", "get-weather"])


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """OpenAI Chat messages: user turns, and assistant turns whose tool calls are all answered."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": draw(texts)}]
    for turn in range(draw(st.integers(min_value=0, max_value=4))):
        n_calls = draw(st.integers(min_value=0, max_value=3))
        text = draw(st.one_of(st.none(), texts))
        if n_calls == 0 and text is None:
            text = "ok"
        calls = [
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {
                    "name": draw(names),
                    "arguments": json.dumps({"n": draw(st.integers(0, 9))}, separators=(",", ":")),
                },
            }
            for i in range(n_calls)
        ]
        assistant: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            assistant["tool_calls"] = calls
        messages.append(assistant)
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(texts)})
        messages.append({"role": "user", "content": draw(texts)})
    return messages


def _chat_body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": messages,
        "tools": [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
            for n in ("Bash", "Read", "exec_command", "get-weather")
        ],
    }


@settings(max_examples=60, deadline=None)
@given(conversations())
def test_chat_anthropic_chat_round_trip(messages: list[dict[str, Any]]) -> None:
    anth = request_to("anthropic", "openai_chat", _chat_body(messages), model="m")
    roles = [m["role"] for m in anth["messages"]]
    assert all(a != b for a, b in pairwise(roles))  # merged into alternating turns
    back = request_to("openai_chat", "anthropic", anth, model="m")["messages"]
    assert back == messages


@settings(max_examples=40, deadline=None)
@given(conversations())
def test_ollama_results_follow_their_calls(messages: list[dict[str, Any]]) -> None:
    anth = request_to("anthropic", "openai_chat", _chat_body(messages), model="m")
    out = request_to("ollama", "anthropic", anth, model="m")["messages"]
    pending: list[str] = []
    for m in out:
        assert isinstance(m["content"], str)
        if m["role"] == "assistant":
            pending = [c["function"]["name"] for c in m.get("tool_calls", [])]
            assert all(isinstance(c["function"]["arguments"], dict) for c in m.get("tool_calls", []))
        elif m["role"] == "tool":
            assert m["tool_name"] == pending.pop(0)
    tool_msgs = [m["content"] for m in out if m["role"] == "tool"]
    assert tool_msgs == [m["content"] for m in messages if m["role"] == "tool"]


@settings(max_examples=40, deadline=None)
@given(conversations())
def test_responses_items_to_chat(messages: list[dict[str, Any]]) -> None:
    items: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "user":
            items.append(
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": m["content"]}]}
            )
        elif m["role"] == "assistant":
            if m["content"]:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": m["content"]}],
                    }
                )
            for c in m.get("tool_calls", []):
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c["id"],
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"],
                        "id": "fc_x",
                        "status": "completed",
                    }
                )
        else:
            items.append(
                {"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]}
            )
    body = {
        "model": "m",
        "input": items,
        "tools": [
            {"type": "function", "name": n, "parameters": {"type": "object"}}
            for n in ("Bash", "Read", "exec_command", "get-weather")
        ],
    }
    assert request_to("openai_chat", "openai_responses", body, model="m")["messages"] == messages
