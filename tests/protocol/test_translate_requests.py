"""Client request bodies -> backend request bodies, on real captured client requests."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from glider_cli.errors import ConfigError
from glider_cli.protocol.translate import request_to

FIXTURES = Path(__file__).parent.parent / "fixtures" / "clients"


def _bodies(name: str) -> list[dict[str, Any]]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    return [r["body"] for r in data["requests"] if isinstance(r.get("body"), dict)]


CLAUDE_FIRST = _bodies("claude-code-01-first-turn")[0]
CLAUDE_TOOL = _bodies("claude-code-02-tool-use-followup")[1]
CODEX_TOOL = _bodies("codex-exec-01-tool-followup")[1]


def test_passthrough_keeps_everything_but_model() -> None:
    body = copy.deepcopy(CLAUDE_FIRST)
    out = request_to("anthropic", "anthropic", body, model="claude-x")
    assert out["model"] == "claude-x"
    assert {k: v for k, v in out.items() if k != "model"} == {k: v for k, v in body.items() if k != "model"}
    assert body == CLAUDE_FIRST  # input not mutated
    assert request_to("openai_responses", "openai_responses", CODEX_TOOL, model=None) == CODEX_TOOL


def test_claude_code_to_openai_chat_system_and_tool_round_trip() -> None:
    out = request_to("openai_chat", "anthropic", CLAUDE_TOOL, model="qwen3")
    msgs = out["messages"]
    assert out["model"] == "qwen3" and out["stream"] is True
    assert out["stream_options"] == {"include_usage": True}
    # one leading system message: the system blocks and the mid-conversation role:"system" message
    assert [m["role"] for m in msgs].count("system") == 1 and msgs[0]["role"] == "system"
    assert "You are a Claude agent" in msgs[0]["content"] and "# Environment" in msgs[0]["content"]
    assistant = next(m for m in msgs if m["role"] == "assistant")
    call = assistant["tool_calls"][0]
    assert call["id"] == "toolu_3e2506b031aa4bcba34bc6b0" and call["function"]["name"] == "Bash"
    assert json.loads(call["function"]["arguments"])["command"] == "echo glider-tool-ok"
    assert assistant["content"] == "Using a tool."
    tool = msgs[msgs.index(assistant) + 1]
    assert tool == {
        "role": "tool",
        "tool_call_id": "toolu_3e2506b031aa4bcba34bc6b0",
        "content": "glider-tool-ok",
    }
    names = [t["function"]["name"] for t in out["tools"]]
    assert "Bash" in names and "DeferredToolPlaceholder" not in names
    bash = next(t for t in out["tools"] if t["function"]["name"] == "Bash")
    assert bash["function"]["parameters"]["properties"]["command"]["type"] == "string"
    for dropped in ("thinking", "context_management", "output_config", "metadata", "system"):
        assert dropped not in out


def test_claude_code_to_ollama_tool_name_and_no_ids() -> None:
    out = request_to("ollama", "anthropic", CLAUDE_TOOL, model="qwen3:4b")
    msgs = out["messages"]
    assert msgs[0]["role"] == "system" and sum(m["role"] == "system" for m in msgs) == 1
    assistant = next(m for m in msgs if m["role"] == "assistant")
    assert assistant["tool_calls"] == [
        {
            "function": {
                "name": "Bash",
                "arguments": {"command": "echo glider-tool-ok", "description": "Print a marker"},
            }
        }
    ]
    tool = msgs[msgs.index(assistant) + 1]
    assert tool == {"role": "tool", "tool_name": "Bash", "content": "glider-tool-ok"}
    assert all(isinstance(m["content"], str) for m in msgs)
    assert out["stream"] is True and out["options"]["num_predict"] == CLAUDE_TOOL["max_tokens"]


def test_codex_responses_to_chat_and_anthropic() -> None:
    chat = request_to("openai_chat", "openai_responses", CODEX_TOOL, model="local")
    msgs = chat["messages"]
    assert (
        msgs[0]["role"] == "system"
        and "You are a coding agent running in the Codex CLI" in msgs[0]["content"]
    )
    assert sum(m["role"] == "system" for m in msgs) == 1
    assistant = next(m for m in msgs if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["id"] == "call_ded8bb78c2284cd1a80131a2"
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"cmd": "echo glider-tool-ok"}'
    assert msgs[-1]["role"] == "tool" and msgs[-1]["tool_call_id"] == "call_ded8bb78c2284cd1a80131a2"
    assert "glider-tool-ok" in msgs[-1]["content"]
    names = [t["function"]["name"] for t in chat["tools"]]
    assert "exec_command" in names and "multi_agent_v1" not in names  # namespace/web_search dropped

    anth = request_to("anthropic", "openai_responses", CODEX_TOOL, model="claude-x")
    assert "Codex CLI" in anth["system"] and anth["max_tokens"] == 8192
    last_two = anth["messages"][-2:]
    assert last_two[0]["role"] == "assistant" and last_two[0]["content"][-1]["type"] == "tool_use"
    assert last_two[0]["content"][-1]["input"] == {"cmd": "echo glider-tool-ok"}
    result = last_two[1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "call_ded8bb78c2284cd1a80131a2"


def test_chat_to_anthropic_roles_tools_images() -> None:
    body = {
        "model": "gpt",
        "max_completion_tokens": 100,
        "temperature": 0.2,
        "stop": "END",
        "tool_choice": "required",
        "messages": [
            {"role": "developer", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "look", "arguments": '{"x":1}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "look", "arguments": '{"x":2}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "one"},
            {"role": "tool", "tool_call_id": "call_2", "content": "two"},
            {"role": "system", "content": "late system note"},
            {"role": "user", "content": "thanks"},
        ],
        "tools": [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}],
        "unknown_field": {"kept": False},
    }
    out = request_to("anthropic", "openai_chat", body, model="claude-x")
    assert out["system"] == "be brief\n\nlate system note"
    assert out["max_tokens"] == 100 and out["temperature"] == 0.2 and out["stop_sequences"] == ["END"]
    assert out["tool_choice"] == {"type": "any"}
    user, assistant, results = out["messages"]
    assert user["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
    }
    assert [b["id"] for b in assistant["content"]] == ["call_1", "call_2"]
    assert [b["type"] for b in results["content"]] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in results["content"][:2]] == ["call_1", "call_2"]
    assert "unknown_field" not in out


def test_anthropic_to_chat_images_and_errors() -> None:
    body = {
        "model": "c",
        "max_tokens": 10,
        "system": [{"type": "text", "text": "sys", "cache_control": {}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                    {"type": "text", "text": "see"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "secret", "signature": "sig"},
                    {"type": "tool_use", "id": "toolu_9", "name": "t", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_9",
                        "is_error": True,
                        "content": [{"type": "text", "text": "boom"}],
                    },
                ],
            },
        ],
    }
    out = request_to("openai", "anthropic", body, model=None)
    assert out["model"] == "c"
    system, user, assistant, tool = out["messages"]
    assert system == {"role": "system", "content": "sys"}
    assert user["content"][0] == {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
    assert "secret" not in json.dumps(assistant)  # thinking history is dropped
    assert tool == {"role": "tool", "tool_call_id": "toolu_9", "content": "Error: boom"}


def test_ollama_images_and_options() -> None:
    body = {
        "model": "c",
        "max_tokens": 5,
        "temperature": 0.5,
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"},
                    },
                    {"type": "text", "text": "describe"},
                ],
            }
        ],
    }
    out = request_to("ollama", "anthropic", body, model="llava")
    assert out["messages"] == [{"role": "user", "content": "describe", "images": ["QUJD"]}]
    assert out["options"] == {"temperature": 0.5, "num_predict": 5} and out["stream"] is False


def test_responses_backend_only_serves_responses_clients() -> None:
    with pytest.raises(ConfigError):
        request_to("openai_responses", "anthropic", CLAUDE_FIRST, model=None)
    with pytest.raises(ConfigError):
        request_to("gemini", "anthropic", CLAUDE_FIRST, model=None)


def test_max_tokens_cap() -> None:
    capped = request_to("openai_chat", "anthropic", CLAUDE_FIRST, model="q", max_tokens_cap=4096)
    assert CLAUDE_FIRST["max_tokens"] > 4096 and capped["max_tokens"] == 4096
    small = {"model": "c", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    assert request_to("openai_chat", "anthropic", small, model=None, max_tokens_cap=4096)["max_tokens"] == 100
    no_limit = {"model": "g", "messages": [{"role": "user", "content": "hi"}]}
    assert request_to("ollama", "openai_chat", no_limit, model=None, max_tokens_cap=512)["options"] == {
        "num_predict": 512
    }
    # passthrough never rewrites the client's own limits
    assert request_to("anthropic", "anthropic", CLAUDE_FIRST, model=None, max_tokens_cap=10) == CLAUDE_FIRST
