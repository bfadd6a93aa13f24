"""Gemini clients answered by any backend: requests translated to Anthropic, OpenAI Chat and Ollama,
replies and streams (from the fake's hand-written upstream events) translated back to Gemini's shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fake_wire import (
    Reply,
    anthropic_events,
    anthropic_json,
    chat_events,
    chat_json,
    ollama_events,
    plan_reply,
)
from glider_cli.protocol import gemini
from glider_cli.protocol.gemini_request import frame
from glider_cli.protocol.translate import request_to, response_to, text_reply
from glider_cli.protocol.translate_stream import StreamTranslator

SHELL = {
    "functionDeclarations": [
        {
            "name": "run_shell_command",
            "description": "Run a command",
            "parameters": {"type": "OBJECT", "properties": {"command": {"type": "STRING"}}},
        }
    ]
}
TURN = [
    {"role": "user", "parts": [{"text": "<session_context>ctx</session_context>"}, {"text": "run it"}]},
    {
        "role": "model",
        "parts": [
            {"text": "thinking about it", "thought": True},
            {
                "functionCall": {"id": "call_abc", "name": "run_shell_command", "args": {"command": "ls"}},
                "thoughtSignature": "skip_thought_signature_validator",
            },
        ],
    },
    {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "call_abc",
                    "name": "run_shell_command",
                    "response": {"output": "a.txt"},
                }
            }
        ],
    },
]
BACKENDS = ("anthropic", "openai_chat", "ollama")


def body(contents: list[Any], **extra: Any) -> dict[str, Any]:
    return frame({"contents": contents, **extra}, "gemini-3.8-flash", "streamGenerateContent", "alt=sse")


def test_a_tool_turn_translated_for_openai_chat() -> None:
    b = body(TURN, tools=[SHELL], systemInstruction={"parts": [{"text": "be brief"}]})
    out = request_to("openai_chat", "gemini", b, model="qwen3")
    assert out["model"] == "qwen3" and out["stream"] is True
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert out["messages"][0]["content"] == "be brief"
    (tc,) = out["messages"][2]["tool_calls"]
    # the backend's own id (Gemini CLI echoed it) comes back, and the result answers it
    assert tc["id"] == "call_abc" and json.loads(tc["function"]["arguments"]) == {"command": "ls"}
    assert out["messages"][3] == {"role": "tool", "tool_call_id": "call_abc", "content": "a.txt"}
    assert "thinking about it" not in json.dumps(out) and "thoughtSignature" not in json.dumps(out)
    params = out["tools"][0]["function"]["parameters"]
    assert params == {"type": "object", "properties": {"command": {"type": "string"}}}


def test_calls_without_ids_are_paired_by_name_and_order_for_anthropic() -> None:
    turn = json.loads(json.dumps(TURN))
    del turn[1]["parts"][1]["functionCall"]["id"]
    del turn[2]["parts"][0]["functionResponse"]["id"]
    out = request_to("anthropic", "gemini", body(turn, tools=[SHELL]), model="claude-x")
    use = out["messages"][1]["content"][0]
    result = out["messages"][2]["content"][0]
    assert use["type"] == "tool_use" and result["type"] == "tool_result"
    assert result["tool_use_id"] == use["id"] and use["id"].startswith("gemini-")


def test_an_error_result_and_a_json_response_are_kept() -> None:
    turn = json.loads(json.dumps(TURN))
    turn[2]["parts"][0]["functionResponse"]["response"] = {"error": "no such file"}
    out = request_to("anthropic", "gemini", body(turn, tools=[SHELL]), model="c")
    assert out["messages"][2]["content"][0]["is_error"] is True
    turn[2]["parts"][0]["functionResponse"]["response"] = {"files": ["a", "b"]}
    out = request_to("ollama", "gemini", body(turn, tools=[SHELL]), model="q")
    assert out["messages"][-1] == {
        "role": "tool",
        "tool_name": "run_shell_command",
        "content": '{"files":["a","b"]}',
    }


def test_json_mode_reaches_local_backends() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"complexity_score": {"type": "INTEGER"}},
        "required": ["complexity_score"],
    }
    config = {"responseMimeType": "application/json", "responseJsonSchema": schema, "maxOutputTokens": 64}
    b = frame(
        {"contents": [{"role": "user", "parts": [{"text": "rate"}]}], "generationConfig": config},
        "g",
        "generateContent",
    )
    lowered = {
        "type": "object",
        "properties": {"complexity_score": {"type": "integer"}},
        "required": ["complexity_score"],
    }
    ollama_body = request_to("ollama", "gemini", b, model="q")
    assert ollama_body["format"] == lowered and ollama_body["stream"] is False
    assert ollama_body["options"]["num_predict"] == 64
    chat = request_to("openai_chat", "gemini", b, model="q")
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": lowered},
    }
    plain = frame(
        {
            "contents": [{"parts": [{"text": "x"}]}],
            "generationConfig": {"responseMimeType": "application/json"},
        },
        "g",
        "generateContent",
    )
    assert request_to("openai_chat", "gemini", plain, model="q")["response_format"] == {"type": "json_object"}
    assert "format" not in request_to("ollama", "gemini", body(TURN), model="q")


def test_tool_config_modes() -> None:
    def choice(config: dict[str, Any]) -> Any:
        return request_to(
            "openai_chat", "gemini", body(TURN, tools=[SHELL], toolConfig=config), model="q"
        ).get("tool_choice")

    assert choice({"functionCallingConfig": {"mode": "ANY"}}) == "required"
    assert choice(
        {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["run_shell_command"]}}
    ) == {
        "type": "function",
        "function": {"name": "run_shell_command"},
    }
    assert choice({"functionCallingConfig": {"mode": "NONE"}}) == "none"


def upstream_reply(backend: str, *, tool: bool, stream: bool) -> Any:
    text = "GLIDER_TOOL:shell" if tool else "hi"
    schema = {"type": "object", "properties": {"command": {"type": "string"}}}
    tools = (
        [{"name": "shell", "input_schema": schema}]
        if backend == "anthropic"
        else [{"type": "function", "function": {"name": "shell", "parameters": schema}}]
    )
    plan = plan_reply(
        backend, {"model": "up", "messages": [{"role": "user", "content": text}], "tools": tools}, Reply()
    )
    if not stream:
        return {"anthropic": anthropic_json, "openai_chat": chat_json, "ollama": lambda p: None}[backend](
            plan
        )
    if backend == "anthropic":
        return b"".join(anthropic_events(plan))
    if backend == "openai_chat":
        return b"".join(chat_events(plan, include_usage=True))
    return b"".join(ollama_events(plan))


def sse_objects(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(block[len(b"data: ") :]) for block in data.split(b"\n\n") if block.strip()]


@pytest.mark.parametrize("backend", ["anthropic", "openai_chat"])
def test_a_whole_reply_in_gemini_shape(backend: str) -> None:
    out = response_to(
        "gemini", backend, upstream_reply(backend, tool=True, stream=False), model="gemini-3.8-flash"
    )
    (candidate,) = out["candidates"]
    assert out["modelVersion"] == "gemini-3.8-flash" and candidate["finishReason"] == "STOP"
    parts = candidate["content"]["parts"]
    assert candidate["content"]["role"] == "model" and parts[0] == {"text": "Using a tool."}
    call = parts[1]["functionCall"]
    assert call["name"] == "shell" and call["args"] == {"command": "echo glider-tool-ok"} and call["id"]
    assert out["usageMetadata"] == {"promptTokenCount": 21, "candidatesTokenCount": 9, "totalTokenCount": 30}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tool", [False, True])
@settings(max_examples=15, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=6))
def test_streams_from_any_backend(backend: str, tool: bool, cuts: list[int]) -> None:
    data = upstream_reply(backend, tool=tool, stream=True)
    t = StreamTranslator("gemini", backend, model="gemini-3.8-flash")
    out: list[bytes] = []
    last = 0
    for p in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        out += t.feed(data[last:p])
        last = p
    out += t.finish()
    events = sse_objects(b"".join(out))
    parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    text = "".join(p.get("text", "") for p in parts)
    assert text == ("Using a tool." if tool else f"hello from fake {backend} up")
    assert all(p.get("text") != "" for p in parts)  # Gemini CLI rejects a chunk with an empty text part
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    assert calls == (
        [{"id": calls[0]["id"], "name": "shell", "args": {"command": "echo glider-tool-ok"}}] if tool else []
    )
    assert [e["candidates"][0].get("finishReason") for e in events][-1] == "STOP"
    assert all("finishReason" not in e["candidates"][0] for e in events[:-1])
    assert events[-1]["usageMetadata"]["candidatesTokenCount"] == 9
    assert {e["modelVersion"] for e in events} == {"gemini-3.8-flash"}


def test_a_stream_without_alt_sse_is_one_json_array() -> None:
    t = StreamTranslator("gemini", "openai_chat", model="g", sse=False)
    out = b"".join(t.feed(upstream_reply("openai_chat", tool=False, stream=True)) + t.finish())
    array = json.loads(out)
    assert (
        "".join(e["candidates"][0]["content"]["parts"][0]["text"] for e in array[:-1])
        == "hello from fake openai_chat up"
    )
    assert array[-1]["candidates"][0]["finishReason"] == "STOP"


def test_a_failure_mid_stream_is_googles_error_object() -> None:
    t = StreamTranslator("gemini", "ollama", model="g")
    t.feed(b'{"model":"q","message":{"role":"assistant","content":"par"},"done":false}\n')
    (frame_,) = t.feed(b'{"error":"model crashed"}\n')
    assert sse_objects(frame_) == [{"error": {"code": 500, "message": "model crashed", "status": "INTERNAL"}}]
    assert gemini.error_json(429, "slow down")["error"]["status"] == "RESOURCE_EXHAUSTED"


def test_a_delegate_answer_as_a_gemini_reply() -> None:
    whole = text_reply("gemini", "done", model="gemini-x", stream=False)
    assert isinstance(whole, dict) and whole["candidates"][0]["content"]["parts"] == [{"text": "done"}]
    streamed = text_reply("gemini", "done", model="gemini-x", stream=True)
    assert isinstance(streamed, list) and sse_objects(b"".join(streamed))[0]["candidates"][0]["content"][
        "parts"
    ] == [{"text": "done"}]


def test_a_gemini_reply_read_back() -> None:
    reply = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "hm", "thought": True}, {"functionCall": {"name": "f", "args": {}}}],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 2,
            "cachedContentTokenCount": 4,
            "thoughtsTokenCount": 3,
        },
    }
    resp = gemini.parse_response(reply)
    assert (
        resp.stop_reason == "tool_use" and resp.usage.input_tokens == 6 and resp.usage.cache_read_tokens == 4
    )
    assert resp.usage.output_tokens == 5 and resp.parts[1].id.startswith("call_")
