"""A stream that fails after its first byte ends with the same error frame whether Glider relayed it
unchanged (`/cloud` -> origin, same protocol) or translated it (`/local` -> Ollama): one spelling per
client protocol, the one the real API uses, checked live and through the official SDKs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from glider_harness import GliderServer, backends_yaml

from fake_upstream import FakeUpstream
from sdk_parse import anthropic_client, openai_client

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["m"], ollama_models=["qwen-local"])]

PATHS = {"/cloud": "origin", "/local": "ollama"}  # passthrough, translated


@pytest.fixture(scope="module")
def glider(fake: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GliderServer]:
    # No fallback for the local side: a cut stream must reach the client, not be retried elsewhere.
    with GliderServer(backends_yaml(fake.url, local_fallback="none"), tmp_path_factory.mktemp("g")) as g:
        yield g


def _frames(text: str) -> list[tuple[str | None, Any]]:
    out: list[tuple[str | None, Any]] = []
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        name = next((ln[7:] for ln in lines if ln.startswith("event: ")), None)
        data = next((ln[6:] for ln in lines if ln.startswith("data: ")), "null")
        out.append((name, None if data == "[DONE]" else json.loads(data)))
    return out


def _cut_stream(g: GliderServer, fake: FakeUpstream, protocol: str, word: str) -> str:
    fake.reset()
    fake.set_fault(cut_after=3)
    messages = [{"role": "user", "content": f"{word} hi"}]
    if protocol == "anthropic":
        path, headers = "/v1/messages", {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        body: dict[str, Any] = {"model": "m", "max_tokens": 32, "messages": messages}
    elif protocol == "openai_chat":
        path, headers = "/v1/chat/completions", {"authorization": "Bearer k"}
        body = {"model": "m", "messages": messages}
    else:
        path, headers = "/v1/responses", {"authorization": "Bearer k"}
        body = {"model": "m", "input": [{"type": "message", **messages[0]}]}
    r = httpx.post(g.url + path, json={**body, "stream": True}, headers=headers, timeout=30)
    assert r.status_code == 200
    backend = PATHS[word]
    assert f"backend={backend}" in r.headers["x-glider-route"]
    assert fake.requests[-1].path == ("/api/chat" if backend == "ollama" else path)
    assert f"upstream {backend} failed mid-stream" in r.text
    return r.text


@pytest.mark.parametrize("word", PATHS)
def test_anthropic_stream_ends_with_an_error_event(
    glider: GliderServer, fake: FakeUpstream, word: str
) -> None:
    text = _cut_stream(glider, fake, "anthropic", word)
    frames = _frames(text)
    assert frames[0][0] == "message_start"
    name, data = frames[-1]
    assert name == "error" and set(data) == {"type", "error"} and data["type"] == "error"
    assert data["error"]["type"] == "api_error" and "failed mid-stream" in data["error"]["message"]
    assert "message_stop" not in [n for n, _ in frames]
    with (
        pytest.raises(anthropic.APIStatusError, match="failed mid-stream"),
        anthropic_client(text.encode()).messages.stream(
            model="m", max_tokens=1, messages=[{"role": "user", "content": "x"}]
        ) as s,
    ):
        s.get_final_message()


@pytest.mark.parametrize("word", PATHS)
def test_chat_stream_ends_with_an_error_chunk(glider: GliderServer, fake: FakeUpstream, word: str) -> None:
    text = _cut_stream(glider, fake, "openai_chat", word)
    frames = _frames(text)
    assert all(name is None for name, _ in frames)  # Chat streams have no `event:` lines
    assert frames[0][1]["object"] == "chat.completion.chunk"
    data = frames[-1][1]
    assert set(data) == {"error"}
    assert set(data["error"]) == {"message", "type", "param", "code"}
    assert data["error"]["type"] == data["error"]["code"] == "server_error"
    with pytest.raises(openai.APIError, match="failed mid-stream"):
        list(openai_client(text.encode()).chat.completions.create(model="m", messages=[], stream=True))


@pytest.mark.parametrize("word", PATHS)
def test_responses_stream_ends_with_response_failed(
    glider: GliderServer, fake: FakeUpstream, word: str
) -> None:
    text = _cut_stream(glider, fake, "openai_responses", word)
    frames = _frames(text)
    assert frames[0][0] == "response.created"
    names = [n for n, _ in frames]
    assert "error" not in names and names.count("response.failed") == 1
    name, data = frames[-1]
    assert name == data["type"] == "response.failed"
    assert isinstance(data["sequence_number"], int)
    response = data["response"]
    assert response["object"] == "response" and response["status"] == "failed"
    assert response["error"]["code"] == "server_error"
    assert "failed mid-stream" in response["error"]["message"]
    events = list(openai_client(text.encode()).responses.create(model="m", input="x", stream=True))
    assert events[-1].type == "response.failed"
    assert events[-1].response.error is not None and events[-1].response.status == "failed"


@pytest.mark.parametrize("protocol", ["anthropic", "openai_chat", "openai_responses"])
def test_both_paths_spell_the_error_frame_alike(
    glider: GliderServer, fake: FakeUpstream, protocol: str
) -> None:
    def shape(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: shape(v) for k, v in value.items() if k not in ("output",)}
        return type(value).__name__

    last = [_frames(_cut_stream(glider, fake, protocol, word))[-1] for word in PATHS]
    assert last[0][0] == last[1][0]  # the same event name (or none)
    assert shape(last[0][1]) == shape(last[1][1])  # the same keys, nested, with the same value types
