from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glider_cli.config.load import load_config
from glider_cli.errors import GliderError, RequestError
from glider_cli.protocol.parse import guess_protocol, parse_request, protocol_for_path
from glider_cli.protocol.tokens import estimate_tokens
from glider_cli.router import Router

FIXTURES = Path(__file__).parent / "fixtures" / "clients"


def captured() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(FIXTURES.glob("*.json")):
        for i, req in enumerate(json.loads(path.read_text())["requests"]):
            if req["method"] == "POST" and isinstance(req.get("body"), dict):
                out.append((f"{path.stem}#{i}", req))
    return out


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(load_config(profile="default"))


@pytest.mark.parametrize(("label", "req"), captured(), ids=[c[0] for c in captured()])
def test_captured_client_requests_are_explained(label: str, req: dict[str, Any], router: Router) -> None:
    protocol = protocol_for_path(req["path"])
    assert protocol is not None
    headers = dict(req["headers"]) if isinstance(req["headers"], list) else req["headers"]
    chat = parse_request(protocol, req["body"], headers)
    if "count_tokens" not in req["path"]:
        assert guess_protocol(req["body"]) == protocol
    decision = router.decide(chat).to_dict()
    assert decision["target"] in ("local", "cloud")
    assert decision["request"]["estimated_tokens"] > 0
    assert decision["trace"]


def test_claude_code_first_turn() -> None:
    req = next(r for label, r in captured() if label.startswith("claude-code-01"))
    chat = parse_request("anthropic", req["body"], dict(req["headers"]))
    assert chat.session_id == "f3a9fe11-61bd-4c0d-a84c-49979fac465b"
    assert chat.messages[-1].role == "user"  # the role:"system" message is folded into system
    assert "# Environment" in chat.system or "Environment" in chat.system
    assert "<system-reminder>" not in chat.messages[-1].content
    assert chat.has_tools and "Bash" in chat.tool_names
    assert chat.stream is True


def test_claude_code_tool_followup() -> None:
    req = next(r for label, r in captured() if label.startswith("claude-code-02") and label.endswith("#1"))
    chat = parse_request("anthropic", req["body"], dict(req["headers"]))
    assert chat.messages[-1].tool_results
    assert any(m.tool_calls for m in chat.messages if m.role == "assistant")


def test_codex_responses_followup() -> None:
    req = next(r for label, r in captured() if label.startswith("codex") and label.endswith("#1"))
    chat = parse_request("openai_responses", req["body"], dict(req["headers"]))
    assert chat.messages[-1].role == "tool" and chat.messages[-1].tool_results
    assert chat.messages[-2].tool_calls[0].name == "exec_command"
    assert chat.session_id
    assert "exec_command" in chat.tool_names


def test_anthropic_shapes() -> None:
    chat = parse_request(
        "anthropic",
        {
            "model": "m",
            "system": [{"type": "text", "text": "sys"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image", "source": {}}]},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "out"}]},
            ],
            "metadata": {"user_id": json.dumps({"session_id": "s-1"})},
            "temperature": 0.2,
            "max_tokens": 10,
            "unknown_field": {"kept": True},
        },
    )
    assert chat.system == "sys" and chat.messages[0].content == "a"
    assert chat.messages[1].tool_calls[0].name == "Read" and chat.messages[2].tool_results == ("t1",)
    assert chat.session_id == "s-1" and chat.temperature == 0.2 and chat.max_tokens == 10


def test_openai_chat_shapes() -> None:
    chat = parse_request(
        "openai_chat",
        {
            "model": "gpt",
            "messages": [
                {"role": "developer", "content": "dev"},
                {"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "result"},
            ],
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "max_completion_tokens": 5,
        },
    )
    assert chat.system == "dev\nsys"
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool"]
    assert chat.messages[2].tool_results == ("c1",) and chat.tool_names == ("f",) and chat.max_tokens == 5


def test_responses_string_input_and_instructions() -> None:
    chat = parse_request("openai_responses", {"model": "m", "input": "hello", "instructions": "be brief"})
    assert chat.messages[-1].content == "hello" and chat.system == "be brief"


@pytest.mark.parametrize(
    ("protocol", "body", "fragment"),
    [
        ("anthropic", {"model": "m"}, "no 'messages'"),
        ("anthropic", {"model": "m", "messages": "x"}, "must be a list"),
        ("anthropic", {"model": "m", "messages": [1]}, "messages[0] must be an object"),
        ("anthropic", {"model": 3, "messages": []}, "'model' must be a string"),
        ("openai_chat", {"model": "m", "messages": [{"content": "x"}]}, "role must be a string"),
        ("openai_responses", {"model": "m", "input": 5}, "'input' must be a string or a list"),
        ("openai_chat", {"model": "m", "messages": [], "stream": "yes"}, "'stream' must be true or false"),
        ("klingon", {"model": "m"}, "unknown protocol"),
    ],
)
def test_malformed_bodies(protocol: str, body: dict[str, Any], fragment: str) -> None:
    with pytest.raises(RequestError) as exc:
        parse_request(protocol, body)
    assert fragment in str(exc.value) and exc.value.status == 400


def test_token_estimate_is_bytes_over_four() -> None:
    assert (
        estimate_tokens(system="abcd", messages=["abcd", "é"], tools=[]) == 3
    )  # 4 + 4 + 2 bytes -> ceil(10/4)
    assert estimate_tokens() == 0
    assert estimate_tokens(tools=[{"name": "x"}]) == 3  # {"name":"x"} is 12 bytes


@given(st.text(max_size=40))
def test_utf8_len_is_the_encoded_length(text: str) -> None:
    from glider_cli.protocol.tokens import utf8_len

    assert utf8_len(text) == len(text.encode("utf-8", "surrogatepass"))


def test_pre_lowered_headers_are_kept_as_given() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"x-claude-code-session-id": "s-1", "user-agent": "claude-cli/2"}
    chat = parse_request("anthropic", body, headers, lowered=True)
    assert chat.session_id == "s-1" and chat.headers is headers
    mixed = parse_request("anthropic", body, {"X-Claude-Code-Session-Id": "s-2"})
    assert mixed.session_id == "s-2" and mixed.headers == {"x-claude-code-session-id": "s-2"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool", "developer", "x"]) | json_values},
    optional={"content": json_values | st.text(), "tool_calls": json_values, "type": json_values},
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": st.text(max_size=10) | json_values,
        "messages": st.lists(message, max_size=4) | json_values,
        "input": st.lists(message, max_size=4) | json_values,
        "system": json_values,
        "tools": json_values,
        "stream": st.booleans() | json_values,
        "temperature": json_values,
        "metadata": json_values,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(protocol=st.sampled_from(["anthropic", "openai_chat", "openai_responses"]), body=bodies)
def test_any_body_gives_a_decision_or_a_clear_error(
    protocol: str, body: dict[str, Any], router: Router
) -> None:
    try:
        chat = parse_request(protocol, body)
    except GliderError as exc:
        assert exc.message
        return
    assert router.decide(chat).target in ("local", "cloud")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text())
def test_any_message_gives_a_decision(text: str, router: Router) -> None:
    chat = parse_request("anthropic", {"model": "m", "messages": [{"role": "user", "content": text}]})
    assert router.decide(chat).target in ("local", "cloud")


def test_deeply_nested_body_is_a_request_error() -> None:
    nested: Any = "x"
    for _ in range(5000):
        nested = [nested]
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "tool_result", "content": nested}]}],
    }
    # A tool result's content items are blocks: the first list inside it is the wrong type.
    with pytest.raises(RequestError, match=r"content\[0\]\.content\[0\] must be a string or an object"):
        parse_request("anthropic", body)
    deep: Any = "x"
    for _ in range(5000):
        deep = {"a": [deep]}
    body["messages"] = [
        {"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": deep}]}
    ]
    with pytest.raises(RequestError, match="nested too deeply"):
        parse_request("anthropic", body)


@pytest.mark.parametrize(
    ("protocol", "body"),
    [
        ("anthropic", {"model": "m", "system": "s" * 4000, "messages": [{"role": "user", "content": "hi"}]}),
        (
            "anthropic",
            {
                "model": "m",
                "system": [{"type": "text", "text": "s" * 4000}],
                "messages": [{"role": "user", "content": "hi"}],
            },
        ),
        (
            "openai_chat",
            {
                "model": "m",
                "messages": [{"role": "system", "content": "s" * 4000}, {"role": "user", "content": "hi"}],
            },
        ),
        ("openai_responses", {"model": "m", "instructions": "s" * 4000, "input": "hi"}),
    ],
)
def test_the_system_prompt_counts_once(protocol: str, body: dict[str, object]) -> None:
    # 4000 bytes of system text + "hi": 4002 bytes, 1001 tokens (it once counted twice: 2001).
    assert parse_request(protocol, body).estimated_tokens == 1001


@pytest.mark.parametrize(
    ("blocks", "system"),
    [
        (["a", "b"], "a\nb"),
        (["a", "", "b"], "a\n\nb"),  # an empty block among several keeps its line
        (["", "b"], "\nb"),
        ([""], ""),
        ([], ""),
    ],
)
def test_system_blocks_are_joined_as_given(blocks: list[str], system: str) -> None:
    body = {
        "model": "m",
        "system": [{"type": "text", "text": t} for t in blocks],
        "messages": [{"role": "system", "content": "folded"}, {"role": "user", "content": "hi"}],
    }
    chat = parse_request("anthropic", body)
    assert chat.system == (f"{system}\nfolded" if system else "folded")
    assert chat.estimated_tokens == -(-(sum(map(len, blocks)) + len("folded") + 2) // 4)


def test_a_system_list_with_other_blocks_is_system_text_too() -> None:
    body = {
        "model": "m",
        "system": [{"type": "text", "text": "a"}, "b", {"type": "image", "source": {}}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert parse_request("anthropic", body).system == 'a\nb\n{"type": "image", "source": {}}'
    body["system"] = [{"type": "text", "text": "a"}, {"type": "text"}]
    with pytest.raises(RequestError, match=r"system\[1\]\.text must be a string"):
        parse_request("anthropic", body)


@pytest.mark.parametrize(
    ("text", "is_reminder"),
    [
        ("<system-reminder>x", True),
        ("\n\u2003 <system-reminder>x", True),  # after any whitespace `str.lstrip` strips
        ("\u200b<system-reminder>x", False),  # a zero-width space is no whitespace
        (" note <system-reminder>", False),
        ("", False),
    ],
)
def test_reminder_blocks_are_not_content(text: str, is_reminder: bool) -> None:
    content = [{"type": "text", "text": text}, {"type": "text", "text": "hi"}]
    chat = parse_request("anthropic", {"model": "m", "messages": [{"role": "user", "content": content}]})
    assert chat.messages[0].content == ("hi" if is_reminder or not text else f"{text}\nhi")
