"""A local answer whose server reports no usage in a stream (llama-cpp-python) is accounted from what it
was sent and what it said, in every client protocol (issue 39 §3): the outcome's output is the text's
bytes/4 (the count a translated stream's closing usage told the client), never the stream's framing;
its input is the pack the local model read, not the client's whole request, which is kept apart
(`client_input_tokens`) as the savings' basis. A strict fake Chat server stands in for llama.cpp."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream
from glider_cli.protocol.parse import parse_request

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["smol", "claude-sonnet-4-5", "gpt-5"])]

# 70 characters: 18 tokens at bytes/4, over a stream of some 2-5 KB of framing.
TEXT = "Hi there! I am a small local model and I can help you with your code ok"[:70]
ANTHROPIC = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
OPENAI = {"authorization": "Bearer sk-client"}
# Earlier turns the client resends on every request: the pack keeps only the turn in progress.
HISTORY = [
    m
    for i in range(12)
    for m in (
        {"role": "user", "content": f"question {i}: " + "please look at this code " * 40},
        {"role": "assistant", "content": f"answer {i}: " + "here is what it does " * 40},
    )
]


def _config(url: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{url}/v1', model: smol}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n"
        "routing:\n  local_backend: llama\n"
    )


def _sse(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and "{" in line]


def _outcomes(home: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted((home / "context").glob("events-*.jsonl")):
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if e["type"] == "FulfilledLocal":
                out.append(e["data"])
    return out


def test_every_client_s_local_stream_without_usage_is_counted_from_its_text_and_its_pack(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    fake.set_reply(text=TEXT, stream_usage=False)
    told: dict[str, int] = {}
    asked: dict[str, int] = {}
    with GliderServer(_config(fake.url), tmp_path, record=False) as g:
        msgs = [*HISTORY, {"role": "user", "content": "/local say hi"}]
        body: dict[str, Any] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 512,
            "stream": True,
            "messages": msgs,
        }
        r = httpx.post(g.url + "/v1/messages", json=body, headers=ANTHROPIC, timeout=30)
        assert r.status_code == 200, r.text
        told["anthropic"] = next(e for e in _sse(r.text) if e["type"] == "message_delta")["usage"][
            "output_tokens"
        ]
        asked["anthropic"] = parse_request("anthropic", body).estimated_tokens

        chat = {"model": "gpt-5", "stream": True, "messages": msgs}  # passed through to the Chat server
        r = httpx.post(g.url + "/v1/chat/completions", json=chat, headers=OPENAI, timeout=30)
        assert r.status_code == 200 and "[DONE]" in r.text, r.text
        assert (
            "".join(c["choices"][0]["delta"].get("content") or "" for c in _sse(r.text) if c["choices"])
            == TEXT
        )
        asked["chat"] = parse_request("openai_chat", chat).estimated_tokens

        items = [{"role": m["role"], "content": m["content"]} for m in msgs]
        resp = {"model": "gpt-5", "stream": True, "input": items}
        r = httpx.post(g.url + "/v1/responses", json=resp, headers=OPENAI, timeout=30)
        assert r.status_code == 200, r.text
        done = next(e for e in _sse(r.text) if e["type"] == "response.completed")
        told["responses"] = done["response"]["usage"]["output_tokens"]
        asked["responses"] = parse_request("openai_responses", resp).estimated_tokens

        parts = [
            {"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
            for m in msgs
        ]
        gem = {"contents": parts}
        r = httpx.post(
            g.url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            json=gem,
            headers={"x-goog-api-key": "k"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        told["gemini"] = [c for c in _sse(r.text) if "usageMetadata" in c][-1]["usageMetadata"][
            "candidatesTokenCount"
        ]
        asked["gemini"] = parse_request("gemini", {**gem, "model": "gemini-2.5-flash"}).estimated_tokens
    outs = _outcomes(tmp_path / "home")
    assert len(outs) == 4, outs
    # 70 bytes of text are 18 tokens; the client of a translated stream was told the same 18.
    assert told == {"anthropic": 18, "responses": 18, "gemini": 18}
    for o, client in zip(outs, ("anthropic", "chat", "responses", "gemini"), strict=True):
        assert o["backend"] == "llama" and o["status"] == 200, o
        assert o["output_tokens"] == 18, (client, o)
        assert o["estimated"] == ["input_tokens", "output_tokens"], (client, o)
        # The input is the pack's (the turn in progress and Glider's brief), a fraction of the client's.
        assert 0 < o["input_tokens"] < asked[client] / 4, (client, o["input_tokens"], asked[client])
        assert o["client_input_tokens"] == asked[client], client
    sent = [r for r in fake.requests if r.path == "/v1/chat/completions"]
    assert len(sent) == 4 and all(len(r.raw) < 6000 for r in sent)  # packs went out, not the history


def test_a_strategy_member_without_usage_is_counted_from_its_text_not_its_body(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    config = _config(fake.url) + (
        "  rules:\n"
        "    - {name: together, priority: 97, trigger: {type: explicit, commands: ['/ens']},"
        " action: {target: local, strategy: ensemble}}\n"
        "orchestration:\n  ensemble: {enabled: true, members: [{backend: llama}, {backend: origin}]}\n"
    )
    # The Chat server's whole reply without a usage object (the cloud member's reply reports its own).
    bare = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "smol",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT}, "finish_reason": "stop"}],
    }
    fake.set_fault(status=200, body=bare, times=1, paths=("/v1/chat/completions",))
    with GliderServer(config, tmp_path, record=False) as g:
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "messages": [*HISTORY, {"role": "user", "content": "/ens hi"}],
        }
        r = httpx.post(g.url + "/v1/messages", json=body, headers=ANTHROPIC, timeout=60)
        assert r.status_code == 200, r.text
    evs = []
    for f in sorted((tmp_path / "home" / "context").glob("events-*.jsonl")):
        evs += [json.loads(line) for line in f.read_text().splitlines()]
    (local,) = [e["data"] for e in evs if e["type"] == "StrategyMember" and e["data"]["side"] == "local"]
    assert local["estimated"] == ["input_tokens", "output_tokens"]
    assert local["output_tokens"] == 18  # 70 bytes of text, not the ~250 bytes of its JSON body
    assert local["input_tokens"] < parse_request("anthropic", body).estimated_tokens / 4  # the pack's
