"""A translated stream whose backend reported no usage (llama-cpp-python's streams carry none) ends with
Glider's estimate, marked `glider_estimate`, in every client protocol; a reported usage is passed on as it
is, unmarked (issue 24 §11). (A Chat client of an OpenAI-compatible backend is a passthrough: its stream
is relayed as the server sent it.)"""

from __future__ import annotations

import json

import pytest

from glider_cli.protocol.translate_stream import StreamTranslator

TEXT = "Hello! How can I help you today?"  # 32 bytes: 8 estimated tokens


def _chat_stream(usage: bool) -> bytes:
    def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": "smollm2",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    frames = [chunk({"role": "assistant"}), chunk({"content": TEXT}), chunk({}, "stop")]
    if usage:
        frames.append({**chunk({}), "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9}})
    return b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames) + b"data: [DONE]\n\n"


def _events(client: str, usage: bool) -> list[dict[str, object]]:
    t = StreamTranslator(client, "openai_chat", model="gpt-5", include_usage=True, input_estimate=120)
    out = b"".join(t.feed(_chat_stream(usage)) + t.finish()).decode()
    return [json.loads(line[6:]) for line in out.splitlines() if line.startswith("data: {")]


def _final_usage(client: str, events: list[dict[str, object]]) -> dict[str, object]:
    if client == "openai_responses":
        return next(e for e in events if e["type"] == "response.completed")["response"]["usage"]  # type: ignore[index,return-value]
    if client == "anthropic":
        return next(e for e in events if e["type"] == "message_delta")["usage"]  # type: ignore[return-value]
    return [e for e in events if "usageMetadata" in e][-1]["usageMetadata"]  # type: ignore[return-value]


COUNTS = {
    "openai_responses": ("input_tokens", "output_tokens"),
    "anthropic": ("input_tokens", "output_tokens"),
    "gemini": ("promptTokenCount", "candidatesTokenCount"),
}


@pytest.mark.parametrize("client", list(COUNTS))
def test_no_usage_from_the_backend_gives_the_marked_estimate(client: str) -> None:
    usage = _final_usage(client, _events(client, usage=False))
    inp, out = COUNTS[client]
    assert (usage[inp], usage[out], usage["glider_estimate"]) == (120, 8, True), usage


@pytest.mark.parametrize("client", list(COUNTS))
def test_a_reported_usage_is_passed_on_unmarked(client: str) -> None:
    usage = _final_usage(client, _events(client, usage=True))
    inp, out = COUNTS[client]
    assert (usage[inp], usage[out]) == (40, 9) and "glider_estimate" not in usage, usage
