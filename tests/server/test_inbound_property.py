"""Every inbound shape, fuzzed through the real app: 2xx or a protocol-shaped 4xx, never a 5xx.

hypothesis mutates valid Anthropic, Chat and Responses bodies (a field replaced by a value of another
type, a field dropped, items of the wrong shape) and sends them through `create_app` with its real
parse, routing and translation to an Ollama-speaking backend or passthrough to the cloud (a strict
fake answers both). Then wrong TYPES at every depth: rich valid bodies of all four protocols (every
block and item type, tools, tool calls and results, system items, metadata, tool_choice) have each
of their values, one at a time, replaced by values of other JSON types (every field in turn, and
hypothesis drawing any field and any value), sent to the model API and to the explain API's
embedded `request`. Plus the shapes found by hand. Bounded and derandomized: it runs in CI.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["m"], ollama_models=["qwen-local"])]

PATHS = {
    "anthropic": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
}
BASE: dict[str, dict[str, Any]] = {
    "anthropic": {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "/local hi"}]},
    "openai_chat": {"model": "m", "messages": [{"role": "user", "content": "/local hi"}]},
    "openai_responses": {"model": "m", "input": "/local hi"},
}
FIELDS = ["model", "messages", "input", "tools", "system", "max_tokens", "stream", "tool_choice",
          "temperature", "instructions", "metadata", "content", "role"]  # fmt: skip
junk = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def glider(fake: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("fuzz")
    config = (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
    )
    with GliderServer(config, tmp, record=False) as g:
        yield g


def _mutate(body: dict[str, Any], key: str, value: Any, where: str) -> dict[str, Any]:
    out = json.loads(json.dumps(body))
    if where == "top":
        out[key] = value
    elif where == "drop":
        out.pop(key, None)
    else:  # inside the first message / input item
        items = out.get("messages") or out.get("input")
        if isinstance(items, list) and items and isinstance(items[0], dict):
            items[0][key] = value
        else:
            out["input"] = [{key: value}]
    return out


def _check(g: Any, protocol: str, body: Any) -> None:
    r = httpx.post(
        g.url + PATHS[protocol],
        content=json.dumps(body),
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert r.status_code < 500, (r.status_code, r.text, body)
    if r.status_code >= 400:
        err = r.json()
        assert "error" in err, err  # protocol-shaped


# The live server runs in another thread and its libraries use the `random` module while hypothesis
# draws; hypothesis would take that for a strategy using `random` (its deprecation warning).
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    protocol=st.sampled_from(sorted(PATHS)),
    key=st.sampled_from(FIELDS),
    value=junk,
    where=st.sampled_from(["top", "drop", "item"]),
)
def test_any_mutated_body_is_2xx_or_a_protocol_shaped_4xx(
    glider: Any, protocol: str, key: str, value: Any, where: str
) -> None:
    _check(glider, protocol, _mutate(BASE[protocol], key, value, where))


@pytest.mark.parametrize(
    ("protocol", "body"),
    [
        ("openai_chat", {**BASE["openai_chat"], "tools": 630}),
        ("openai_responses", {**BASE["openai_responses"], "tools": 3.5}),
        ("openai_chat", {**BASE["openai_chat"], "tools": [5]}),
    ],
)
def test_the_shapes_that_answered_500_are_400s(glider: Any, protocol: str, body: dict[str, Any]) -> None:
    r = httpx.post(glider.url + PATHS[protocol], json=body, timeout=30)
    assert r.status_code == 400, r.text
    assert "tools" in r.json()["error"]["message"]


# ------------------------------------------------------------------ wrong types at every depth

_PNG = "iVBORw0KGgo="
_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
RICH: dict[str, dict[str, Any]] = {
    "anthropic": {
        "model": "m",
        "max_tokens": 64,
        "stream": False,
        "temperature": 0.5,
        "system": [
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Be brief."},
        ],
        "metadata": {"user_id": '{"session_id": "s-1"}'},
        "tools": [{"name": "Read", "description": "read a file", "input_schema": _SCHEMA}],
        "tool_choice": {"type": "auto"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "read a.txt"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "sig"},
                    {"type": "text", "text": "ok"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.txt"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "hello"}],
                        "is_error": False,
                    },
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _PNG}},
                    {"type": "text", "text": "summarise it"},
                ],
            },
        ],
    },
    "openai_chat": {
        "model": "m",
        "max_tokens": 64,
        "temperature": 0.2,
        "stream": False,
        "stop": ["\\n\\n"],
        "tools": [
            {"type": "function", "function": {"name": "read", "description": "read", "parameters": _SCHEMA}}
        ],
        "tool_choice": {"type": "function", "function": {"name": "read"}},
        "metadata": {"k": "v"},
        "response_format": {"type": "text"},
        "messages": [
            {"role": "system", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "read a.txt"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_PNG}"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
            {"role": "user", "content": "summarise"},
        ],
    },
    "openai_responses": {
        "model": "m",
        "instructions": "be brief",
        "max_output_tokens": 64,
        "stream": False,
        "tools": [{"type": "function", "name": "read", "description": "read", "parameters": _SCHEMA}],
        "tool_choice": {"type": "function", "name": "read"},
        "metadata": {"k": "v"},
        "text": {"format": {"type": "text"}},
        "reasoning": {"effort": "low"},
        "input": [
            {"role": "developer", "content": "dev note"},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "read a.txt"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{_PNG}"},
                ],
            },
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            {"role": "user", "content": "summarise"},
        ],
    },
    "gemini": {
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "<session_context>x</session_context>"},
                    {"text": "read a.txt"},
                    {"inlineData": {"mimeType": "image/png", "data": _PNG}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"text": "hm", "thought": True},
                    {"functionCall": {"name": "read", "args": {"path": "a"}}},
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "read", "response": {"output": "hello"}}}],
            },
        ],
        "tools": [{"functionDeclarations": [{"name": "read", "description": "read", "parameters": _SCHEMA}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 64, "stopSequences": ["x"]},
    },
}
RICH_PATHS = {**PATHS, "gemini": "/v1beta/models/gemini-x:generateContent"}
# What real clients send (a cloud passthrough reaches a strict fake that wants a key).
CLIENT_HEADERS = {
    "content-type": "application/json",
    "x-api-key": "sk-client",
    "anthropic-version": "2023-06-01",
    "authorization": "Bearer sk-client",
    "x-goog-api-key": "client-key",
}
Path_ = tuple[str | int, ...]


def _paths(value: Any, at: Path_ = ()) -> list[Path_]:
    """Every value's place in a body, containers before what they hold."""
    out: list[Path_] = [at] if at else []
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*at, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*at, i)))
    return out


PLACES = [(protocol, path) for protocol in sorted(RICH) for path in _paths(RICH[protocol])]
# Two values of other JSON types for every value of the rich bodies (containers first: a dict or a
# list where a string is read is what breaks hashing and string code).
_OTHER: dict[type, tuple[Any, Any]] = {
    str: ({"type": 1}, -433),
    int: ("x", [596, True]),
    float: ("x", {}),
    bool: ("x", {"a": 1}),
    dict: ([596, True], "x"),
    list: ({"type": "text"}, 1),
    type(None): ({}, 1),
}


def _replaced(body: dict[str, Any], path: Path_, value: Any, *, drop: bool = False) -> dict[str, Any]:
    out = json.loads(json.dumps(body))
    holder = out
    for step in path[:-1]:
        holder = holder[step]
    if drop:
        del holder[path[-1]]
    else:
        holder[path[-1]] = value
    return out


def _send(
    client: httpx.Client, g: Any, protocol: str, body: Any, *, explain: bool, guess: bool = False
) -> None:
    """To the model API, or embedded in an explain request (`guess`: without naming its protocol)."""
    if explain:
        if protocol == "gemini":
            body = {**body, "model": "gemini-x"}
        named = {} if guess else {"protocol": protocol}
        r = client.post(g.url + "/api/router/explain", json={**named, "request": body})
    else:
        r = client.post(g.url + RICH_PATHS[protocol], content=json.dumps(body))
    assert r.status_code < 500, (r.status_code, r.text, body)
    if r.status_code >= 400:
        assert "error" in r.json(), r.text  # protocol-shaped


@pytest.mark.parametrize("protocol", sorted(RICH))
def test_the_rich_bodies_are_answered(glider: Any, protocol: str) -> None:
    with httpx.Client(timeout=30, headers=CLIENT_HEADERS) as client:
        for explain in (False, True):
            r = client.post(
                g_url(glider, protocol, explain),
                json={
                    "protocol": protocol,
                    "request": {**RICH[protocol], "model": "gemini-x"}
                    if protocol == "gemini"
                    else RICH[protocol],
                }
                if explain
                else RICH[protocol],
            )
            assert r.status_code == 200, r.text


def g_url(g: Any, protocol: str, explain: bool) -> str:
    return g.url + ("/api/router/explain" if explain else RICH_PATHS[protocol])


@pytest.mark.parametrize("protocol", sorted(RICH))
def test_every_field_of_every_shape_with_a_wrong_type_is_a_4xx(glider: Any, protocol: str) -> None:
    """Each value of the rich body in turn, at every depth, replaced by two values of other types."""
    places = [path for p, path in PLACES if p == protocol]
    with httpx.Client(timeout=30, headers=CLIENT_HEADERS) as client:
        for n, path in enumerate(places):
            original: Any = RICH[protocol]
            for step in path:
                original = original[step]
            for value in _OTHER[type(original)]:
                _send(client, glider, protocol, _replaced(RICH[protocol], path, value), explain=n % 3 == 0)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    place=st.sampled_from(PLACES),
    value=junk,
    drop=st.booleans(),
    explain=st.booleans(),
)
def test_any_field_at_any_depth_replaced_or_dropped_is_2xx_or_a_4xx(
    glider: Any, place: tuple[str, Path_], value: Any, drop: bool, explain: bool
) -> None:
    protocol, path = place
    drop = drop and isinstance(path[-1], str)
    with httpx.Client(timeout=30, headers=CLIENT_HEADERS) as client:
        body = _replaced(RICH[protocol], path, value, drop=drop)
        _send(client, glider, protocol, body, explain=explain, guess=explain and drop)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/messages",
            {
                "model": "m",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": [{"type": {}, "text": -433}]}],
            },
        ),
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": [{"type": [596, True], "text": 1}]}]},
        ),
    ],
)
def test_the_issue_23_bodies_are_400s_naming_the_field(glider: Any, path: str, body: dict[str, Any]) -> None:
    r = httpx.post(glider.url + path, json=body, timeout=30)
    assert r.status_code == 400, r.text
    assert "messages[0].content[0].type must be a string" in r.json()["error"]["message"]
