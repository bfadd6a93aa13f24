"""`Spec.ok` (check_types' fast pass) gives the verdict `Spec.check` gives, on every value.

A body the fast pass takes is not walked again, so the two must agree exactly: rich bodies of all
four shapes (real Claude Code and Codex captures among them) with each value, one at a time,
replaced by values of every other JSON type, and hypothesis's junk bodies.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glider_cli.errors import RequestError
from glider_cli.protocol.inbound_types import SHAPES, check_types
from glider_cli.protocol.type_specs import Bad

CLIENTS = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


def captured(name: str) -> dict[str, Any]:
    body = json.loads((CLIENTS / name).read_text())["requests"][0]["body"]
    assert isinstance(body, dict)
    return body


CHAT = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": "u"}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {}, "strict": True}}],
    "tool_choice": {"type": "function", "function": {"name": "f"}},
    "stream": True,
    "stream_options": {"include_usage": True},
    "max_tokens": 10,
    "temperature": 0.5,
    "stop": ["x"],
    "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {}, "strict": False}},
}
GEMINI = {
    "model": "g",
    "stream": False,
    "contents": [
        {"role": "user", "parts": [{"text": "hi"}, {"inline_data": {"mime_type": "a", "data": "b"}}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}, "thought": True}]},
        {"role": "user", "parts": [{"function_response": {"name": "f", "response": {}}}]},
    ],
    "systemInstruction": {"parts": [{"text": "s"}]},
    "tools": [{"functionDeclarations": [{"name": "f", "parameters": {}}]}],
    "generationConfig": {"temperature": 1, "stopSequences": ["z"], "thinkingConfig": {}},
}
BODIES = {
    "anthropic": captured("claude-code-02-tool-use-followup.json"),
    "openai_responses": captured("codex-exec-01-tool-followup.json"),
    "openai_chat": CHAT,
    "gemini": GEMINI,
}
OTHERS: list[Any] = [None, True, 0, 1.5, "s", [], ["s"], [None], [{}], {}, {"type": 1}, {"type": "text"},
                     {"type": "zz", "text": 1}, [{"type": "text", "text": 2}], [{"text": "t"}]]  # fmt: skip


def verdict(protocol: str, body: Any) -> tuple[bool, bool]:
    shape = SHAPES[protocol]
    try:
        shape.check(body)
        slow = True
    except Bad:
        slow = False
    return shape.ok(body), slow


def places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*path, k)
            yield from places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:4]):
            yield (*path, i)
            yield from places(v, (*path, i))


def replaced(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(body)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize("protocol", sorted(BODIES))
def test_the_fast_pass_agrees_with_the_check_on_every_value_replaced(protocol: str) -> None:
    body = BODIES[protocol]
    assert verdict(protocol, body) == (True, True)
    refused = 0
    for path in places(body):
        for other in OTHERS:
            fast, slow = verdict(protocol, replaced(body, path, other))
            assert fast == slow, (path, other)
            refused += not slow
    assert refused > 50  # the replacements do reach fields the shapes check


def test_check_types_names_the_same_field_as_before() -> None:
    body = replaced(BODIES["anthropic"], ("messages", 1, "content", 0, "type"), 7)
    with pytest.raises(
        RequestError, match=r"^messages\[1\]\.content\[0\]\.type must be a string, got number$"
    ):
        check_types("anthropic", body)


KEYS = ["type", "text", "role", "content", "parts", "messages", "input", "tools", "function", "name",
        "tool_calls", "contents", "functionCall", "function_call", "output", "source"]  # fmt: skip
junk = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 9) | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(
        st.sampled_from(KEYS),
        inner,
        max_size=4,
    ),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=400, derandomize=True, deadline=None)
@given(protocol=st.sampled_from(sorted(SHAPES)), body=junk)
def test_the_fast_pass_agrees_with_the_check_on_junk(protocol: str, body: Any) -> None:
    fast, slow = verdict(protocol, body)
    assert fast == slow
