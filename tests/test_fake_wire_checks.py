"""The fake upstream refuses what the real services refuse: unknown models, bad or unanswered tool ids,
a context over the window, each with the service's own status and error body."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from fake_upstream import FakeUpstream

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def server() -> Iterator[FakeUpstream]:
    with FakeUpstream(models=("claude-x", "gpt-x"), ollama_models=("qwen-local", "llama3:8b")) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeUpstream) -> Iterator[FakeUpstream]:
    server.reset()
    yield server
    server.reset()


def _post(fake: FakeUpstream, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(fake.url + path, json=body, timeout=10)


def _user(text: str = "hi") -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_unknown_models_get_each_services_404(fake: FakeUpstream) -> None:
    r = _post(fake, "/v1/messages", {"model": "qwen2.5-coder:14b", "max_tokens": 5, "messages": _user()})
    assert r.status_code == 404
    assert r.json() == {
        "type": "error",
        "error": {"type": "not_found_error", "message": "model: qwen2.5-coder:14b"},
    }
    r = _post(fake, "/v1/chat/completions", {"model": "qwen2.5-coder:14b", "messages": _user()})
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    assert r.json()["error"]["type"] == "invalid_request_error"
    r = _post(fake, "/v1/responses", {"model": "nope", "input": "hi"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    r = _post(fake, "/api/chat", {"model": "claude-x", "messages": _user()})
    assert r.status_code == 404 and r.json() == {"error": "model 'claude-x' not found"}
    r = _post(fake, "/v1/messages/count_tokens", {"model": "nope", "messages": _user()})
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"
    # Nothing was answered: every refusal is still recorded.
    assert len(fake.requests) == 5


def test_served_models_are_answered_and_listed(fake: FakeUpstream) -> None:
    assert _post(fake, "/v1/messages", {"model": "claude-x", "max_tokens": 5, "messages": _user()}).is_success
    assert _post(fake, "/v1/chat/completions", {"model": "gpt-x", "messages": _user()}).is_success
    # Ollama: a name without a tag is `:latest`; a tag must match.
    ok = {"model": "qwen-local:latest", "stream": False, "messages": _user()}
    assert _post(fake, "/api/chat", ok).json()["done"] is True
    assert _post(fake, "/api/chat", {**ok, "model": "llama3"}).status_code == 404
    assert _post(fake, "/api/chat", {**ok, "model": "llama3:8b"}).status_code == 200
    tags = [m["name"] for m in httpx.get(fake.url + "/api/tags").json()["models"]]
    assert tags == ["llama3:8b", "qwen-local:latest"]
    assert [m["id"] for m in httpx.get(fake.url + "/v1/models").json()["data"]] == ["claude-x", "gpt-x"]


def test_serve_changes_the_models_until_reset(fake: FakeUpstream) -> None:
    fake.serve(models=["other"])
    assert _post(fake, "/v1/chat/completions", {"model": "gpt-x", "messages": _user()}).status_code == 404
    assert _post(fake, "/v1/chat/completions", {"model": "other", "messages": _user()}).status_code == 200
    fake.reset()
    assert _post(fake, "/v1/chat/completions", {"model": "gpt-x", "messages": _user()}).status_code == 200


def test_sdks_raise_not_found_for_an_unknown_model(fake: FakeUpstream) -> None:
    client = anthropic.Anthropic(base_url=fake.url, api_key="sk-test", max_retries=0)
    with pytest.raises(anthropic.NotFoundError, match="model: qwen"):
        client.messages.create(model="qwen", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    oai = openai.OpenAI(base_url=fake.url + "/v1", api_key="sk-test", max_retries=0)
    with pytest.raises(openai.NotFoundError) as info:
        oai.chat.completions.create(model="qwen", messages=[{"role": "user", "content": "x"}])
    assert info.value.code == "model_not_found"


def _anthropic_turn(call_id: str, answer_id: str | None = None) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": answer_id or call_id, "content": "ok"}],
        },
    ]


def test_anthropic_tool_ids_are_checked(fake: FakeUpstream) -> None:
    body = {"model": "claude-x", "max_tokens": 5}
    assert _post(fake, "/v1/messages", {**body, "messages": _anthropic_turn("toolu_01ab-C_d")}).is_success
    r = _post(fake, "/v1/messages", {**body, "messages": _anthropic_turn("call:1/x")})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert r.json()["error"]["message"] == (
        "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
    )
    orphan = _anthropic_turn("toolu_1", "toolu_2")
    orphan[1] = {"role": "assistant", "content": [{"type": "text", "text": "no call"}]}
    r = _post(fake, "/v1/messages", {**body, "messages": orphan})
    assert r.status_code == 400 and "unexpected `tool_use_id`" in r.json()["error"]["message"]
    r = _post(fake, "/v1/messages", {**body, "messages": _anthropic_turn("toolu_1", "toolu_2")})
    assert r.status_code == 400 and "toolu_1" in r.json()["error"]["message"]
    unanswered = [*_anthropic_turn("toolu_1")[:2], {"role": "user", "content": "and?"}]
    r = _post(fake, "/v1/messages", {**body, "messages": unanswered})
    assert r.status_code == 400 and "without `tool_result` blocks" in r.json()["error"]["message"]
    # count_tokens validates the conversation the same way.
    r = _post(fake, "/v1/messages/count_tokens", {"model": "claude-x", "messages": _anthropic_turn("a b")})
    assert r.status_code == 400


def _chat_turn(call_id: str, answer_id: str | None = None) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "shell", "arguments": "{}"}}
    return [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": answer_id or call_id, "content": "ok"},
    ]


def test_openai_chat_and_responses_tool_ids_are_checked(fake: FakeUpstream) -> None:
    assert _post(
        fake, "/v1/chat/completions", {"model": "gpt-x", "messages": _chat_turn("call_1")}
    ).is_success
    r = _post(fake, "/v1/chat/completions", {"model": "gpt-x", "messages": _chat_turn("call_1", "call_2")})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages.[2].role"
    r = _post(fake, "/v1/chat/completions", {"model": "gpt-x", "messages": _chat_turn("c" * 41)})
    assert r.status_code == 400 and r.json()["error"]["code"] == "string_above_max_length"
    unanswered = [*_chat_turn("call_1")[:2], {"role": "user", "content": "and?"}]
    r = _post(fake, "/v1/chat/completions", {"model": "gpt-x", "messages": unanswered})
    assert r.status_code == 400 and "did not have response messages: call_1" in r.json()["error"]["message"]
    orphan = [{"type": "function_call_output", "call_id": "call_9", "output": "ok"}]
    r = _post(fake, "/v1/responses", {"model": "gpt-x", "input": orphan})
    assert r.status_code == 400 and "call_id call_9" in r.json()["error"]["message"]
    # A stored conversation (previous_response_id) holds its calls server-side.
    assert _post(
        fake, "/v1/responses", {"model": "gpt-x", "input": orphan, "previous_response_id": "r"}
    ).is_success


def test_a_context_over_the_window_gets_each_services_400(fake: FakeUpstream) -> None:
    fake.serve(context_window=100)
    long = _user("x" * 1000)
    r = _post(fake, "/v1/messages", {"model": "claude-x", "max_tokens": 5, "messages": long})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert r.json()["error"]["message"].startswith("prompt is too long: ")
    assert r.json()["error"]["message"].endswith(" tokens > 100 maximum")
    r = _post(fake, "/v1/chat/completions", {"model": "gpt-x", "messages": long})
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"
    r = _post(fake, "/api/chat", {"model": "qwen-local", "messages": long})
    assert r.status_code == 400 and r.json() == {"error": "the input length exceeds the context length"}
    # Short requests and token counting still work.
    assert _post(fake, "/v1/chat/completions", {"model": "gpt-x", "messages": _user()}).is_success
    counted = _post(fake, "/v1/messages/count_tokens", {"model": "claude-x", "messages": long})
    assert counted.json() == {"input_tokens": 42}


def test_a_missing_model_is_a_400(fake: FakeUpstream) -> None:
    r = _post(fake, "/v1/messages", {"max_tokens": 5, "messages": _user()})
    assert r.status_code == 400 and r.json()["error"]["message"] == "model: Field required"
    assert _post(fake, "/api/chat", {"messages": _user()}).status_code == 400
