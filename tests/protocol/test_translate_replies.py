"""Non-streaming replies, replies re-told as streams, plain text replies and error shapes."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from fake_wire import Reply, anthropic_json, chat_json, ollama_json, plan_reply
from fake_wire_responses import responses_json
from glider_cli.protocol.error_bodies import error_response, translate_error
from glider_cli.protocol.ir import Usage
from glider_cli.protocol.translate import response_to, synthesize_stream, text_reply
from sdk_parse import anthropic_client, anthropic_final, chat_final, openai_client, responses_final

SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}
TOOLS = {
    "anthropic": [{"name": "shell", "input_schema": SCHEMA}],
    "openai_chat": [{"type": "function", "function": {"name": "shell", "parameters": SCHEMA}}],
    "openai_responses": [{"type": "function", "name": "shell", "parameters": SCHEMA}],
    "ollama": [{"type": "function", "function": {"name": "shell", "parameters": SCHEMA}}],
}
BUILDERS = {
    "anthropic": anthropic_json,
    "openai_chat": chat_json,
    "ollama": ollama_json,
    "openai_responses": responses_json,
}


def backend_reply(proto: str, *, tool: bool, thinking: str | None = None) -> dict[str, Any]:
    text = "GLIDER_TOOL:shell" if tool else "hi"
    key = "input" if proto == "openai_responses" else "messages"
    body = {"model": "up", key: [{"role": "user", "content": text}], "tools": TOOLS[proto]}
    return BUILDERS[proto](plan_reply(proto, body, Reply(thinking=thinking)))


@pytest.mark.parametrize("backend", ["openai_chat", "ollama"])
@pytest.mark.parametrize("tool", [False, True])
def test_to_anthropic_json(backend: str, tool: bool) -> None:
    out = response_to("anthropic", backend, backend_reply(backend, tool=tool, thinking="t"), model="glider")
    msg = anthropic_client(orjson.dumps(out), streaming=False).messages.create(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
    )
    assert msg.model == "glider" and msg.usage.input_tokens == 21 and msg.usage.output_tokens == 9
    assert [b.type for b in msg.content] == (["text", "tool_use"] if tool else ["text"])
    if tool:
        assert msg.content[1].input == {"command": "echo glider-tool-ok"} and msg.stop_reason == "tool_use"
        assert msg.content[1].id


@pytest.mark.parametrize("backend", ["anthropic", "ollama"])
def test_to_chat_json(backend: str) -> None:
    out = response_to("openai_chat", backend, backend_reply(backend, tool=True, thinking="t"), model="glider")
    comp = openai_client(orjson.dumps(out), streaming=False).chat.completions.create(model="m", messages=[])
    call = comp.choices[0].message.tool_calls[0]
    assert call.function.name == "shell" and json.loads(call.function.arguments) == {
        "command": "echo glider-tool-ok"
    }
    assert comp.choices[0].finish_reason == "tool_calls" and comp.usage.total_tokens == 30
    assert out["choices"][0]["message"]["reasoning_content"] == "t"


@pytest.mark.parametrize("backend", ["anthropic", "openai_chat", "ollama"])
def test_to_responses_json(backend: str) -> None:
    out = response_to("openai_responses", backend, backend_reply(backend, tool=True), model="glider")
    resp = openai_client(orjson.dumps(out), streaming=False).responses.create(model="m", input="x")
    assert resp.output_text == "Using a tool." and resp.status == "completed"
    call = resp.output[-1]
    assert call.type == "function_call" and call.name == "shell" and call.call_id


def test_same_protocol_reply_unchanged() -> None:
    body = backend_reply("anthropic", tool=True)
    assert response_to("anthropic", "anthropic", body, model="x") is body


def test_synthesize_stream_from_each_body() -> None:
    body = backend_reply("ollama", tool=True)
    msg = anthropic_final(synthesize_stream("anthropic", body, model="g", body_proto="ollama"))
    assert [b.type for b in msg.content] == ["text", "tool_use"] and msg.stop_reason == "tool_use"
    assert msg.usage.input_tokens == 21 and msg.usage.output_tokens == 9
    final = chat_final(synthesize_stream("openai_chat", backend_reply("openai_chat", tool=False), model="g"))
    assert final.choices[0].message.content == "hello from fake openai_chat up"
    resp = responses_final(
        synthesize_stream("openai_responses", backend_reply("openai_responses", tool=True), model="g")
    )
    assert resp.output_text == "Using a tool." and resp.output[-1].type == "function_call"


@pytest.mark.parametrize("client", ["anthropic", "openai_chat", "openai_responses"])
def test_text_reply(client: str) -> None:
    body = text_reply(client, "delegated result", model="glider", stream=False, usage=Usage(5, 6))
    events = text_reply(client, "delegated result", model="glider", stream=True)
    assert isinstance(body, dict) and isinstance(events, list)
    if client == "anthropic":
        assert body["content"] == [{"type": "text", "text": "delegated result"}]
        assert anthropic_final(events).content[0].text == "delegated result"
    elif client == "openai_chat":
        assert body["choices"][0]["message"]["content"] == "delegated result"
        assert body["usage"]["prompt_tokens"] == 5
        assert chat_final(events).choices[0].message.content == "delegated result"
    else:
        assert body["output"][0]["content"][0]["text"] == "delegated result"
        assert responses_final(events).output_text == "delegated result"


def test_error_shapes() -> None:
    assert error_response("anthropic", 503, "down") == (
        503,
        {"type": "error", "error": {"type": "overloaded_error", "message": "down"}},
    )
    assert error_response("anthropic", 400, "bad", type="invalid_request_error")[1]["error"]["type"] == (
        "invalid_request_error"
    )
    status, body = error_response("openai_responses", 429, "slow")
    assert status == 429 and body == {
        "error": {
            "message": "slow",
            "type": "rate_limit_exceeded",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    assert error_response("openai_chat", 502, "x")[1]["error"]["type"] == "server_error"


def test_translate_upstream_error() -> None:
    ollama_err = b'{"error":"model \\"qwen\\" not found"}'
    status, body = translate_error("anthropic", "ollama", 404, ollama_err)
    assert status == 404 and orjson.loads(body) == {
        "type": "error",
        "error": {"type": "not_found_error", "message": 'model "qwen" not found'},
    }
    anth = b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'
    assert translate_error("anthropic", "anthropic", 529, anth) == (529, anth)
    status, body = translate_error("openai_chat", "anthropic", 529, anth)
    assert orjson.loads(body)["error"]["message"] == "busy" and status == 529
    status, body = translate_error("openai_chat", "openai_chat", 500, b"<html>oops</html>")
    assert orjson.loads(body)["error"]["message"] == "<html>oops</html>"


def test_synthesized_anthropic_stream_keeps_genuine_thinking_only() -> None:
    body = backend_reply("anthropic", tool=False, thinking="deep thought")
    msg = anthropic_final(synthesize_stream("anthropic", body, model="g"))
    assert [b.type for b in msg.content] == ["thinking", "text"]
    assert (
        msg.content[0].thinking == "deep thought"
        and msg.content[0].signature == body["content"][0]["signature"]
    )
    from_ollama = anthropic_final(
        synthesize_stream(
            "anthropic", backend_reply("ollama", tool=False, thinking="t"), model="g", body_proto="ollama"
        )
    )
    assert [b.type for b in from_ollama.content] == ["text"]
