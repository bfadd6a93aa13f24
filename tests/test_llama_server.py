"""The real local model the tests use answers: llama.cpp's server with SmolLM2-135M, through the logging
relay.

Skips (with the reason) only when .ci/run could not build llama-cpp-python[server] (tests/llama_server.py).
"""

from __future__ import annotations

import json

import httpx
import pytest

from llama_server import LlamaServer, LoggingRelay

pytestmark = [pytest.mark.live, pytest.mark.slow]

CHAT = {
    "model": "smollm2",
    "messages": [{"role": "user", "content": "Say hi."}],
    "max_tokens": 8,
    "temperature": 0,
}


def test_the_real_model_answers_with_tokens_and_usage(llama: LlamaServer, llama_relay: LoggingRelay) -> None:
    models = httpx.get(llama.url + "/v1/models", timeout=10).json()
    assert models["object"] == "list" and models["data"][0]["id"].endswith(".gguf")
    r = httpx.post(llama_relay.url + "/v1/chat/completions", json=CHAT, timeout=120)
    assert r.status_code == 200, r.text
    out = r.json()
    text = out["choices"][0]["message"]["content"]
    assert isinstance(text, str) and text.strip()
    usage = out["usage"]
    assert usage["prompt_tokens"] > 5 and 0 < usage["completion_tokens"] <= 8
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    # The relay saw exactly what the model received.
    [seen] = llama_relay.requests
    assert seen.method == "POST" and seen.path == "/v1/chat/completions"
    assert seen.body == CHAT and seen.size == len(r.request.content)


def test_the_relay_streams_the_real_models_events(llama_relay: LoggingRelay) -> None:
    body = {**CHAT, "stream": True}
    with httpx.stream("POST", llama_relay.url + "/v1/chat/completions", json=body, timeout=120) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[6:]) for line in lines[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text.strip()
    assert [r.body["stream"] for r in llama_relay.requests] == [True]
