"""StreamTranslator: upstream bytes from the fake's hand-written event sequences, cut anywhere, come
out as client streams that the official SDKs parse."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fake_wire import Reply, anthropic_events, chat_events, ollama_events, plan_reply
from fake_wire_responses import responses_events
from glider_cli.protocol.ir import Usage
from glider_cli.protocol.sse import SSEDecoder
from glider_cli.protocol.translate_stream import StreamTranslator
from sdk_parse import anthropic_final, chat_chunks, chat_final, responses_final

SHELL_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}
TOOL_BODIES = {
    "anthropic": {"tools": [{"name": "shell", "input_schema": SHELL_SCHEMA}]},
    "openai_chat": {
        "tools": [{"type": "function", "function": {"name": "shell", "parameters": SHELL_SCHEMA}}]
    },
    "ollama": {"tools": [{"type": "function", "function": {"name": "shell", "parameters": SHELL_SCHEMA}}]},
}
BACKENDS = ("anthropic", "openai_chat", "ollama")
CLIENTS = ("anthropic", "openai_chat", "openai_responses")


def upstream(backend: str, *, tool: bool = False, thinking: str | None = None) -> bytes:
    text = "GLIDER_TOOL:shell" if tool else "hi"
    body: dict[str, Any] = {
        "model": "up-model",
        "messages": [{"role": "user", "content": text}],
        **TOOL_BODIES[backend],
    }
    plan = plan_reply(backend, body, Reply(thinking=thinking))
    if backend == "anthropic":
        return b"".join(anthropic_events(plan))
    if backend == "openai_chat":
        return b"".join(chat_events(plan, include_usage=True))
    return b"".join(ollama_events(plan))


def run(t: StreamTranslator, data: bytes, cuts: list[int] | None = None) -> list[bytes]:
    out: list[bytes] = []
    points = sorted({c % (len(data) + 1) for c in cuts or []})
    last = 0
    for p in [*points, len(data)]:
        out += t.feed(data[last:p])
        last = p
    return out + t.finish()


def expected_text(backend: str, tool: bool) -> str:
    return "Using a tool." if tool else f"hello from fake {backend} up-model"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tool", [False, True])
def test_to_anthropic_client(backend: str, tool: bool) -> None:
    client = "anthropic"
    t = StreamTranslator(client, backend, model="glider-auto")
    events = run(t, upstream(backend, tool=tool, thinking="pondering"))
    msg = anthropic_final(events)
    assert msg.model == ("up-model" if backend == client else "glider-auto")  # passthrough keeps bytes
    texts = [b.text for b in msg.content if b.type == "text"]
    assert texts == [expected_text(backend, tool)]
    if tool:
        use = msg.content[-1]
        assert (
            use.type == "tool_use" and use.name == "shell" and use.input == {"command": "echo glider-tool-ok"}
        )
        assert msg.stop_reason == "tool_use"
    else:
        assert msg.stop_reason == "end_turn"
    if backend != "anthropic":
        assert all(b.type != "thinking" for b in msg.content)  # the documented drop rule
    assert msg.usage.output_tokens == 9 and msg.usage.input_tokens == 21
    assert t.usage == Usage(21, 9) and t.complete and t.started
    assert t.stop_reason == ("tool_use" if tool else "end_turn")
    # one bytes item per event, each a complete SSE event (passthrough returns chunks as received)
    assert backend == client or all(e.endswith(b"\n\n") and e.count(b"\n\n") == 1 for e in events)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tool", [False, True])
def test_to_chat_client(backend: str, tool: bool) -> None:
    t = StreamTranslator("openai_chat", backend, model="glider-auto", include_usage=True)
    events = run(t, upstream(backend, tool=tool, thinking="pondering"))
    final = chat_final(events)
    msg = final.choices[0].message
    assert msg.content == expected_text(backend, tool)
    if tool:
        call = msg.tool_calls[0]
        assert call.function.name == "shell" and json.loads(call.function.arguments) == {
            "command": "echo glider-tool-ok"
        }
        assert final.choices[0].finish_reason == "tool_calls"
    chunks = chat_chunks(events)
    assert chunks[-1].usage.prompt_tokens == 21 and chunks[-1].usage.completion_tokens == 9
    reasoning = "".join(
        getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices
    )
    assert reasoning == "pondering"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tool", [False, True])
def test_to_responses_client(backend: str, tool: bool) -> None:
    t = StreamTranslator("openai_responses", backend, model="glider-auto")
    events = run(t, upstream(backend, tool=tool))
    resp = responses_final(events)
    assert resp.status == "completed" and resp.output_text == expected_text(backend, tool)
    assert resp.usage.input_tokens == 21 and resp.usage.output_tokens == 9
    if tool:
        call = next(o for o in resp.output if o.type == "function_call")
        assert call.name == "shell" and json.loads(call.arguments) == {"command": "echo glider-tool-ok"}
        assert call.call_id and call.id.startswith("fc_")
    seqs = [json.loads(e.split(b"data: ", 1)[1])["sequence_number"] for e in events]
    assert seqs == list(range(len(events)))


@settings(max_examples=40, deadline=None)
@given(
    backend=st.sampled_from(BACKENDS),
    client=st.sampled_from(CLIENTS),
    cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=40),
)
def test_any_chunking_gives_the_same_stream(backend: str, client: str, cuts: list[int]) -> None:
    data = upstream(backend, tool=True)
    whole = run(StreamTranslator(client, backend, model="m"), data)
    split = run(StreamTranslator(client, backend, model="m"), data, cuts)

    def normal(events: list[bytes]) -> list[Any]:
        out = []
        for ev in SSEDecoder().feed(b"".join(events)):
            if ev.data == "[DONE]":
                out.append("[DONE]")
                continue
            obj = ev.json()
            # ids and timestamps are generated per stream
            text = json.dumps(obj, sort_keys=True)
            for key in ("id", "created", "created_at", "item_id", "call_id"):
                text = _blank(text, key)
            out.append((ev.event, text))
        return out

    assert normal(whole) == normal(split)


def _blank(text: str, key: str) -> str:
    import re

    return re.sub(rf'"{key}": ("[^"]*"|\d+)', f'"{key}": "_"', text)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("client", CLIENTS)
def test_upstream_cut_ends_client_stream_with_error(client: str, backend: str) -> None:
    data = upstream(backend, tool=True)
    # cut after half the bytes, at a frame boundary, so every event fed is whole but the end is missing
    sep = b"\n" if backend == "ollama" else b"\n\n"
    cut = data[: data.index(sep, len(data) // 2) + len(sep)]
    t = StreamTranslator(client, backend, model="m")
    events = run(t, cut)
    assert not t.complete and t.started
    last = b"".join(events).decode().rstrip("\n").rsplit("\n\n", 1)[-1]
    if client == "anthropic":
        assert last.startswith("event: error\n") and '"type":"error"' in last
    elif client == "openai_chat":
        assert '"error":{"message":"upstream stream ended before completion"' in last
    else:
        assert last.startswith("event: response.failed\n")
    assert t.finish() == [] and t.error("again") == []


def test_error_mid_stream_is_well_formed_for_sdks() -> None:
    import anthropic
    import openai

    from sdk_parse import anthropic_client, openai_client

    t = StreamTranslator("anthropic", "ollama", model="m")
    first_line = upstream("ollama").split(b"\n")[0] + b"\n"
    events = t.feed(first_line) + t.error("backend died", type="api_error")
    stream = anthropic_client(b"".join(events)).messages.stream(
        model="m", max_tokens=1, messages=[{"role": "user", "content": "x"}]
    )
    with pytest.raises(anthropic.APIStatusError, match="backend died"), stream as s:
        s.get_final_message()
    t = StreamTranslator("openai_chat", "ollama", model="m")
    events = t.feed(first_line) + t.error("backend died")
    with pytest.raises(openai.APIError, match="backend died"):
        list(openai_client(b"".join(events)).chat.completions.create(model="m", messages=[], stream=True))


def test_upstream_error_event_is_translated() -> None:
    t = StreamTranslator("openai_chat", "anthropic", model="m")
    data = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":'
        b'{"input_tokens":3}}}\n\nevent: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"busy"}}\n\n'
    )
    events = run(t, data)
    assert b'"message":"busy"' in events[-1] and b'"type":"overloaded_error"' in events[-1]
    t = StreamTranslator("anthropic", "ollama", model="m")
    events = run(t, b'{"error":"model not found"}\n')
    assert events[-1].startswith(b"event: error\n") and b"model not found" in events[-1]


@pytest.mark.parametrize("proto", CLIENTS)
def test_passthrough_is_byte_identical_and_taps_usage(proto: str) -> None:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    plan = plan_reply(proto, body, Reply(usage=(33, 7)))
    if proto == "anthropic":
        data = b"".join(anthropic_events(plan))
    elif proto == "openai_chat":
        data = b"".join(chat_events(plan, include_usage=True))
    else:
        data = b"".join(responses_events(plan))
    t = StreamTranslator(proto, proto, model="ignored")
    chunks = [data[i : i + 13] for i in range(0, len(data), 13)]
    out = [b for c in chunks for b in t.feed(c)] + t.finish()
    assert b"".join(out) == data
    assert t.usage is not None and t.usage.input_tokens == 33 and t.usage.output_tokens == 7
    assert t.complete and t.stop_reason == "end_turn"


def test_passthrough_cut_gets_error_frame() -> None:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    data = b"".join(responses_events(plan_reply("openai_responses", body, Reply()))[:4])
    t = StreamTranslator("openai_responses", "openai_responses", model="m")
    out = t.feed(data) + t.finish()
    assert out[0] == data
    assert out[-1].startswith(b"event: response.failed\n") and b'"response.created"' not in out[-1]
