"""The fake upstream speaks each protocol well enough for the official SDKs to parse it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest

from fake_upstream import FakeUpstream, closed_port_url

pytestmark = pytest.mark.live

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "w",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}
SHELL_FN = {"name": "shell", "parameters": {"type": "object", "properties": {"command": {"type": "array"}}}}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeUpstream]:
    with FakeUpstream(models=("g", "m", "m1"), ollama_models=("q", "m")) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeUpstream) -> Iterator[FakeUpstream]:
    server.reset()
    yield server
    server.reset()


def _anthropic(fake: FakeUpstream) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.url, api_key="sk-test", max_retries=0)


def _openai(fake: FakeUpstream) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.url + "/v1", api_key="sk-test", max_retries=0)


def test_anthropic_json_and_stream(fake: FakeUpstream) -> None:
    client = _anthropic(fake)
    msg = client.messages.create(model="m1", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert msg.content[0].text == "hello from fake anthropic m1"  # type: ignore[union-attr]
    assert msg.stop_reason == "end_turn"
    with client.messages.stream(model="m1", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text == "hello from fake anthropic m1"
    assert final.usage.input_tokens == 21 and final.usage.output_tokens == 9
    rec = fake.requests[-1]
    assert rec.path == "/v1/messages" and rec.body["stream"] is True
    assert rec.headers["authorization"] == "Bearer sk-test"


def test_anthropic_stream_tool_use_and_thinking(fake: FakeUpstream) -> None:
    fake.set_reply(thinking="let me think")
    client = _anthropic(fake)
    with client.messages.stream(
        model="m1",
        max_tokens=10,
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        messages=[{"role": "user", "content": "GLIDER_TOOL:get_weather"}],
    ) as s:
        final = s.get_final_message()
    kinds = [b.type for b in final.content]
    assert kinds == ["thinking", "text", "tool_use"]
    tool = final.content[2]
    assert tool.name == "get_weather" and tool.input == {"command": "echo glider-tool-ok"}  # type: ignore[union-attr]
    assert tool.id.startswith("toolu_")  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"


def test_anthropic_event_names_and_beta_query(fake: FakeUpstream) -> None:
    body = {"model": "m", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "x"}]}
    r = httpx.post(fake.url + "/v1/messages?beta=true", json=body, headers={"anthropic-beta": "a,b"})
    names = [line[7:] for line in r.text.splitlines() if line.startswith("event: ")]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert fake.requests[-1].query == {"beta": "true"}
    assert fake.requests[-1].headers["anthropic-beta"] == "a,b"


def test_count_tokens_and_models(fake: FakeUpstream) -> None:
    client = _anthropic(fake)
    n = client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}])
    assert n.input_tokens == 42
    assert [m.id for m in client.models.list()] == ["g", "m", "m1"]
    assert [m.id for m in _openai(fake).models.list()] == ["g", "m", "m1"]


def test_openai_chat_json_stream_and_tools(fake: FakeUpstream) -> None:
    client = _openai(fake)
    out = client.chat.completions.create(model="g", messages=[{"role": "user", "content": "hi"}])
    assert out.choices[0].message.content == "hello from fake openai_chat g"
    stream = client.chat.completions.create(
        model="g",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert (
        "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        == out.choices[0].message.content
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 21
    tool = client.chat.completions.create(
        model="g",
        messages=[{"role": "user", "content": "GLIDER_TOOL:shell"}],
        tools=[{"type": "function", "function": SHELL_FN}],  # type: ignore[list-item]
    )
    call = tool.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "shell"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"command": ["echo", "glider-tool-ok"]}  # type: ignore[union-attr]
    assert tool.choices[0].finish_reason == "tool_calls"


def test_openai_chat_stream_tool_deltas(fake: FakeUpstream) -> None:
    client = _openai(fake)
    with client.chat.completions.stream(
        model="g",
        messages=[{"role": "user", "content": "GLIDER_TOOL:shell"}],
        tools=[{"type": "function", "function": SHELL_FN}],  # type: ignore[list-item]
    ) as s:
        final = s.get_final_completion()
    call = final.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "shell" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"command": ["echo", "glider-tool-ok"]}


def test_openai_responses_json_stream_and_tools(fake: FakeUpstream) -> None:
    client = _openai(fake)
    r = client.responses.create(model="g", input="say hi")
    assert r.output_text == "hello from fake openai_responses g"
    with client.responses.stream(model="g", input="say hi") as s:
        final = s.get_final_response()
    assert final.output_text == r.output_text and final.usage is not None
    with client.responses.stream(
        model="g",
        input="GLIDER_TOOL:shell",
        tools=[{"type": "function", **SHELL_FN, "strict": False}],  # type: ignore[list-item]
    ) as s:
        final = s.get_final_response()
    calls = [o for o in final.output if o.type == "function_call"]
    assert calls and calls[0].name == "shell" and calls[0].call_id.startswith("call_")  # type: ignore[union-attr]


def test_responses_sequence_numbers(fake: FakeUpstream) -> None:
    fake.set_reply(thinking="hmm")
    r = httpx.post(fake.url + "/v1/responses", json={"model": "g", "stream": True, "input": "x"})
    datas = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    assert [d["sequence_number"] for d in datas] == list(range(len(datas)))
    assert datas[-1]["type"] == "response.completed"
    assert any(d["type"] == "response.reasoning_summary_text.delta" for d in datas)


def test_ollama_stream_json_and_tags(fake: FakeUpstream) -> None:
    tools = [{"type": "function", "function": SHELL_FN}]
    r = httpx.post(
        fake.url + "/api/chat",
        json={"model": "q", "messages": [{"role": "user", "content": "GLIDER_TOOL:shell"}], "tools": tools},
    )
    lines = [json.loads(x) for x in r.text.splitlines()]
    assert r.headers["content-type"].startswith("application/x-ndjson")
    assert lines[-1]["done"] is True and lines[-1]["done_reason"] == "stop"
    assert lines[-1]["prompt_eval_count"] == 21 and lines[-1]["eval_count"] == 9
    calls = [c for x in lines for c in x["message"].get("tool_calls", [])]
    assert calls == [{"function": {"name": "shell", "arguments": {"command": ["echo", "glider-tool-ok"]}}}]
    one = httpx.post(
        fake.url + "/api/chat",
        json={"model": "q", "stream": False, "messages": [{"role": "user", "content": "hi"}]},
    ).json()
    assert one["message"]["content"] == "hello from fake ollama q" and one["done"] is True
    assert [m["name"] for m in httpx.get(fake.url + "/api/tags").json()["models"]] == ["m:latest", "q:latest"]


def test_ollama_show_is_served_only_when_asked_for_and_strictly() -> None:
    with FakeUpstream(ollama_models=("q",), context_window=512, ollama_show=True) as fake:
        shown = httpx.post(fake.url + "/api/show", json={"model": "q"})
        assert shown.status_code == 200
        assert shown.json()["model_info"]["fake.context_length"] == 512
        assert "tools" in shown.json()["capabilities"]
        missing = httpx.post(fake.url + "/api/show", json={"model": "nope"})
        assert missing.status_code == 404 and missing.json() == {"error": "model 'nope' not found"}
        assert httpx.post(fake.url + "/api/show", json={}).status_code == 400
    with FakeUpstream(ollama_models=("q",)) as fake:
        assert httpx.post(fake.url + "/api/show", json={"model": "q"}).status_code == 404


def test_tool_result_turn_answers_text(fake: FakeUpstream) -> None:
    body = {
        "model": "m",
        "max_tokens": 5,
        "tools": [WEATHER_TOOL],
        "messages": [
            {"role": "user", "content": "GLIDER_TOOL:get_weather"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
        ],
    }
    out = httpx.post(fake.url + "/v1/messages", json=body).json()
    assert out["stop_reason"] == "end_turn" and [b["type"] for b in out["content"]] == ["text"]


@pytest.mark.parametrize(
    ("path", "body", "shape"),
    [
        ("/v1/messages", {"model": "m", "max_tokens": 1, "messages": []}, "anthropic"),
        ("/v1/chat/completions", {"model": "m", "messages": []}, "openai"),
        ("/api/chat", {"model": "m", "messages": []}, "ollama"),
    ],
)
def test_status_faults(fake: FakeUpstream, path: str, body: dict[str, object], shape: str) -> None:
    fake.set_fault(status=503, message="down", times=1)
    r = httpx.post(fake.url + path, json=body)
    assert r.status_code == 503
    err = r.json()
    if shape == "anthropic":
        assert err == {"type": "error", "error": {"type": "overloaded_error", "message": "down"}}
    elif shape == "openai":
        assert err["error"]["message"] == "down" and set(err["error"]) == {"message", "type", "param", "code"}
    else:
        assert err == {"error": "down"}
    assert httpx.post(fake.url + path, json=body).status_code == 200  # times=1 consumed


def test_sdk_sees_status_fault(fake: FakeUpstream) -> None:
    fake.set_fault(status=429, message="slow down")
    with pytest.raises(anthropic.RateLimitError):
        _anthropic(fake).messages.create(model="m", max_tokens=1, messages=[{"role": "user", "content": "x"}])


def test_delay_fault_times_out_client(fake: FakeUpstream) -> None:
    fake.set_fault(delay=5)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(fake.url + "/v1/chat/completions", json={"model": "m", "messages": []}, timeout=0.2)


def test_cut_stream(fake: FakeUpstream) -> None:
    fake.set_fault(cut_after=3)
    body = {"model": "m", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "x"}]}
    received = b""
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", fake.url + "/v1/messages", json=body) as r,
    ):
        for chunk in r.iter_bytes():
            received += chunk
    assert received.count(b"event: ") == 3


def test_refused() -> None:
    with pytest.raises(httpx.ConnectError):
        httpx.get(closed_port_url() + "/v1/models")


def test_fault_limited_to_paths_and_recorded_bodies(fake: FakeUpstream) -> None:
    fake.set_fault(status=500, paths=("/api/chat",))
    ok = httpx.post(fake.url + "/v1/chat/completions", json={"model": "m", "messages": [], "extra": {"x": 1}})
    assert ok.status_code == 200
    assert httpx.post(fake.url + "/api/chat", json={"model": "m", "messages": []}).status_code == 500
    assert [r.path for r in fake.requests] == ["/v1/chat/completions", "/api/chat"]
    assert fake.requests[0].body["extra"] == {"x": 1}


def test_event_delay_streams_event_by_event(fake: FakeUpstream) -> None:
    fake.set_reply(text="one two three", event_delay=0.05)
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    with httpx.stream("POST", fake.url + "/v1/chat/completions", json=body) as r:
        pieces = list(r.iter_raw())
    # each event is flushed on its own, so the body arrives in several reads
    assert len(pieces) > 3 and b"".join(pieces).endswith(b"data: [DONE]\n\n")


def test_forced_tool_reply_without_marker(fake: FakeUpstream) -> None:
    fake.set_reply(tool="shell")
    out = _openai(fake).chat.completions.create(
        model="g",
        messages=[{"role": "user", "content": "plain"}],
        tools=[{"type": "function", "function": SHELL_FN}],  # type: ignore[list-item]
    )
    assert out.choices[0].message.tool_calls[0].function.name == "shell"  # type: ignore[index, union-attr]


def test_a_responses_reply_echoes_the_requests_settings(fake: FakeUpstream) -> None:
    body = {"model": "g", "input": "x", "instructions": "be brief", "max_output_tokens": 64, "top_p": 0.5}
    r = httpx.post(fake.url + "/v1/responses", json=body).json()
    assert (r["instructions"], r["max_output_tokens"], r["top_p"], r["temperature"]) == (
        "be brief",
        64,
        0.5,
        1.0,
    )
    s = httpx.post(fake.url + "/v1/responses", json={**body, "stream": True})
    datas = [json.loads(line[6:]) for line in s.text.splitlines() if line.startswith("data: ")]
    assert {d["response"]["max_output_tokens"] for d in datas if "response" in d} == {64}
    bare = httpx.post(fake.url + "/v1/responses", json={"model": "g", "input": "x"}).json()
    assert (bare["instructions"], bare["max_output_tokens"]) == (None, None)  # the API's defaults
