"""`turns.empty_turns`: the empty model turns a client kept of a failed answer are left out of the
request that escalates the turn; anything with text or a call, and the last message, stay."""

from __future__ import annotations

from typing import Any

import pytest

from glider_cli.turns.empty_turns import without_empty_turns


@pytest.mark.parametrize(
    ("protocol", "items", "kept"),
    [
        (
            "gemini",
            [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": []},
                {"role": "model", "parts": [{"text": " "}]},
                {"role": "model", "parts": [{"functionCall": {"name": "ls"}}]},
                {"role": "user", "parts": [{"text": "[System: nudge]"}]},
            ],
            [0, 3, 4],
        ),
        (
            "anthropic",
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": []},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
                {"role": "user", "content": "again"},
            ],
            [0, 2, 3],
        ),
        (
            "openai_chat",
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": ""},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
                {"role": "user", "content": "again"},
            ],
            [0, 2, 3],
        ),
        (
            "openai_responses",
            [
                {"role": "user", "content": "hi"},
                {"type": "message", "role": "assistant", "content": []},
                {"type": "function_call", "name": "x", "arguments": "{}", "call_id": "c"},
                {"role": "user", "content": "again"},
            ],
            [0, 2, 3],
        ),
    ],
)
def test_empty_model_turns_are_left_out(protocol: str, items: list[dict[str, Any]], kept: list[int]) -> None:
    key = {"gemini": "contents", "openai_responses": "input"}.get(protocol, "messages")
    body = {"model": "m", key: items}
    out = without_empty_turns(protocol, body)
    assert out is not None and out[key] == [items[i] for i in kept] and out["model"] == "m"
    assert without_empty_turns(protocol, out) is None  # nothing more to leave out: the body goes as it is


def test_the_last_message_is_kept_even_when_empty() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]}
    assert without_empty_turns("anthropic", body) is None
