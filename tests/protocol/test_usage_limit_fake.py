"""A reply that stopped at its output-token limit, as each service sends it (the strict fake upstream,
over HTTP, whole and streamed), is seen by `protocol.token_counts.Usage(limit=True)` fed chunk by chunk as
the proxy feeds a reply; a reply that finished is not. OpenAI Responses says it with `status:
incomplete` and `incomplete_details.reason: max_output_tokens` (a stream ends with
`response.incomplete`), Gemini with `finishReason: MAX_TOKENS`."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from fake_upstream import FakeUpstream
from glider_cli.protocol.token_counts import Usage

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-x", "gpt-x"], ollama_models=["qwen-local"]),
]

GEMINI = "gemini-2.5-flash"
SAID = [{"role": "user", "content": "tell me a long story"}]
# (protocol, path, body, headers) of a whole reply; the stream's is the same with `stream: true`
# (Gemini: its streaming method with `alt=sse`; Ollama streams unless told not to).
CALLS: dict[str, tuple[str, dict[str, Any], dict[str, str]]] = {
    "anthropic": (
        "/v1/messages",
        {"model": "claude-x", "max_tokens": 64, "messages": SAID},
        {"x-api-key": "sk-x", "anthropic-version": "2023-06-01"},
    ),
    "openai_chat": ("/v1/chat/completions", {"model": "gpt-x", "max_tokens": 64, "messages": SAID}, {}),
    "openai_responses": (
        "/v1/responses",
        {"model": "gpt-x", "max_output_tokens": 64, "input": "tell me a long story"},
        {},
    ),
    "ollama": ("/api/chat", {"model": "qwen-local", "messages": SAID}, {}),
    "gemini": (
        f"/v1beta/models/{GEMINI}:generateContent",
        {
            "contents": [{"role": "user", "parts": [{"text": "tell me a long story"}]}],
            "generationConfig": {"maxOutputTokens": 64},
        },
        {"x-goog-api-key": "AIza-test"},
    ),
}


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _send(fake: FakeUpstream, protocol: str, stream: bool) -> tuple[Usage, list[bytes]]:
    """The reply's bytes as they came off the socket, fed to a local reply's Usage one by one."""
    path, body, headers = CALLS[protocol]
    params: dict[str, str] = {}
    if protocol == "gemini" and stream:
        path, params = path.replace(":generateContent", ":streamGenerateContent"), {"alt": "sse"}
    elif protocol == "ollama":
        body = {**body, "stream": stream}
    elif protocol == "openai_chat" and stream:  # usage in a Chat stream only when asked for
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    elif stream:
        body = {**body, "stream": True}
    usage = Usage(limit=True)
    chunks: list[bytes] = []
    with httpx.stream("POST", fake.url + path, json=body, headers=headers, params=params, timeout=10) as r:
        assert r.status_code == 200, r.read()
        for chunk in r.iter_raw():
            chunks.append(chunk)
            usage.feed(chunk)
    return usage, chunks


def _datas(chunks: list[bytes]) -> list[dict[str, Any]]:
    text = b"".join(chunks).decode()
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("protocol", list(CALLS))
def test_a_reply_at_the_limit_is_seen_and_a_finished_one_is_not(
    fake: FakeUpstream, protocol: str, stream: bool
) -> None:
    fake.set_reply(text="once upon a time a parser", at_limit=True)
    usage, _ = _send(fake, protocol, stream)
    assert usage.at_limit is True
    assert (usage.input_tokens, usage.output_tokens) == (21, 9)  # the usage still comes with it
    fake.set_reply(text="once upon a time a parser")
    usage, _ = _send(fake, protocol, stream)
    assert usage.at_limit is False


def test_responses_at_the_limit_is_an_incomplete_response(fake: FakeUpstream) -> None:
    fake.set_reply(text="once upon a time a parser", at_limit=True)
    _, chunks = _send(fake, "openai_responses", False)
    whole = json.loads(b"".join(chunks))
    assert (whole["status"], whole["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
    assert whole["output"][0]["status"] == "incomplete" and whole["usage"]["output_tokens"] == 9
    _, chunks = _send(fake, "openai_responses", True)
    datas = _datas(chunks)
    assert [d["sequence_number"] for d in datas] == list(range(len(datas)))
    assert [d["type"] for d in datas if d["type"].startswith("response.") and "response" in d] == [
        "response.created",
        "response.in_progress",
        "response.incomplete",
    ]
    last = datas[-1]["response"]
    assert (last["status"], last["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
    assert last["usage"]["output_tokens"] == 9
    done = [d["item"] for d in datas if d["type"] == "response.output_item.done"]
    assert [i["status"] for i in done] == ["incomplete"]
    # The OpenAI SDK reads it as such.
    client = openai.OpenAI(base_url=fake.url + "/v1", api_key="sk-test", max_retries=0)
    r = client.responses.create(model="gpt-x", input="tell me a long story", max_output_tokens=64)
    assert r.status == "incomplete" and r.incomplete_details is not None
    assert r.incomplete_details.reason == "max_output_tokens"
    assert r.output_text == "once upon a time a parser"
    events = list(
        client.responses.create(
            model="gpt-x", input="tell me a long story", max_output_tokens=64, stream=True
        )
    )
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details is not None
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"


def test_gemini_at_the_limit_finishes_with_max_tokens(fake: FakeUpstream) -> None:
    fake.set_reply(text="once upon a time a parser", at_limit=True)
    _, chunks = _send(fake, "gemini", False)
    whole = json.loads(b"".join(chunks))
    assert whole["candidates"][0]["finishReason"] == "MAX_TOKENS"
    _, chunks = _send(fake, "gemini", True)
    datas = _datas(chunks)
    assert [c["candidates"][0].get("finishReason") for c in datas] == [None, "MAX_TOKENS"]
    assert "".join(p["text"] for c in datas for p in c["candidates"][0]["content"]["parts"]) == (
        "once upon a time a parser"
    )
