"""What an Anthropic client sees of a translated reply: `toolu_`-shaped tool ids that map back to the
backend's own, and the input tokens in `message_start` (the backend's, else the estimate)."""

from __future__ import annotations

import json

from fake_wire import Reply, chat_events, chat_json, ollama_events, plan_reply
from glider_cli.protocol.anthropic import backend_id, client_id
from glider_cli.protocol.translate import request_to, response_to
from glider_cli.protocol.translate_stream import StreamTranslator
from sdk_parse import anthropic_final

SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}
CHAT_TOOL = {
    "model": "up",
    "messages": [{"role": "user", "content": "GLIDER_TOOL:shell"}],
    "tools": [{"type": "function", "function": {"name": "shell", "parameters": SCHEMA}}],
}


def test_client_ids_are_toolu_shaped_and_reversible() -> None:
    assert client_id("call_abc") == "toolu_g_call_abc" and backend_id("toolu_g_call_abc") == "call_abc"
    assert client_id("toolu_01XYZ") == "toolu_01XYZ" and backend_id("toolu_01XYZ") == "toolu_01XYZ"
    assert client_id("chatcmpl-tool-7.1") == "toolu_g_chatcmpl-tool-7_1"
    assert client_id("").startswith("toolu_")


def test_a_translated_tool_call_round_trips_to_the_backends_own_id() -> None:
    reply = response_to(
        "anthropic", "openai_chat", chat_json(plan_reply("openai_chat", CHAT_TOOL, Reply())), model="claude-x"
    )
    use = next(b for b in reply["content"] if b["type"] == "tool_use")
    assert use["id"].startswith("toolu_g_call_")
    history = {
        "model": "claude-x",
        "max_tokens": 64,
        "messages": [
            {"role": "user", "content": "run GLIDER_TOOL:shell"},
            {"role": "assistant", "content": reply["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "ok"}]},
        ],
    }
    out = request_to("openai_chat", "anthropic", history, model="qwen")
    call_id = use["id"].removeprefix("toolu_g_")
    assert out["messages"][1]["tool_calls"][0]["id"] == call_id
    assert out["messages"][2] == {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def test_message_start_reports_the_estimate_and_message_delta_the_backends_count() -> None:
    plan = plan_reply(
        "ollama", {"model": "q", "messages": [{"role": "user", "content": "hi"}]}, Reply(usage=(123, 7))
    )
    t = StreamTranslator("anthropic", "ollama", model="claude-x", input_estimate=99)
    frames = t.feed(b"".join(ollama_events(plan))) + t.finish()
    start = json.loads(frames[0].split(b"data: ", 1)[1])
    assert start["message"]["usage"]["input_tokens"] == 99 and start["message"]["model"] == "claude-x"
    final = anthropic_final(frames)
    assert final.usage.input_tokens == 123 and final.usage.output_tokens == 7


def test_a_backend_that_gives_input_usage_first_is_reported_as_is() -> None:
    plan = plan_reply("openai_chat", {"model": "q", "messages": [{"role": "user", "content": "hi"}]}, Reply())
    t = StreamTranslator("anthropic", "anthropic", model="m", input_estimate=5)  # passthrough: bytes as sent
    assert t.passthrough
    t2 = StreamTranslator("anthropic", "openai_chat", model="m")
    frames = t2.feed(b"".join(chat_events(plan, include_usage=True))) + t2.finish()
    start = json.loads(frames[0].split(b"data: ", 1)[1])
    assert start["message"]["usage"]["input_tokens"] == 0  # no estimate given, none invented
    assert anthropic_final(frames).usage.input_tokens == 21
