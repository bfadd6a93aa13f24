"""fan_out end to end with the real llama.cpp server (SmolLM2-135M): width 2, both members reach the model
(through the logging relay), the chosen answer reaches the client, whole and streamed."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import closed_port_url
from llama_server import LoggingRelay

pytestmark = [pytest.mark.live]


def _config(relay: LoggingRelay) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: openai, side: local, base_url: '{relay.url}/v1', model: smol, max_tokens: 24}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{closed_port_url()}'}}\n"
        "orchestration:\n  fan_out: {enabled: true, width: 2, temperatures: [0.2, 0.9]}\n"
    )


def test_fan_out_width_two_on_the_real_model(llama_relay: LoggingRelay, tmp_path: Path) -> None:
    with GliderServer(_config(llama_relay), tmp_path) as g:
        body = {
            "model": "m",
            "max_tokens": 24,
            "messages": [{"role": "user", "content": "/swarm What is 2+2?"}],
        }
        r = httpx.post(g.url + "/v1/chat/completions", json=body, timeout=300)
        assert r.status_code == 200, r.text
        answer = r.json()["choices"][0]["message"]["content"]
        assert answer.strip()
        sent = [q for q in llama_relay.requests if q.path.endswith("/chat/completions")]
        assert len(sent) == 2
        assert sorted(q.body["temperature"] for q in sent) == [0.2, 0.9]
        assert all(q.body["stream"] is False for q in sent)
        assert [m["outcome"] for m in g.wait_for("StrategyMember", 2)] == ["ok", "ok"]
        chosen = g.wait_for("StrategyChosen")[0]
        assert chosen["complete"] == [0, 1] and chosen["backend"] == "ollama"

        r = httpx.post(g.url + "/v1/chat/completions", json={**body, "stream": True}, timeout=300)
        lines = [line for line in r.text.splitlines() if line.startswith("data: ")]
        assert r.text.startswith(": keep-alive") and lines[-1] == "data: [DONE]"
        text = "".join(
            (c["choices"][0]["delta"].get("content") or "") if c["choices"] else ""
            for c in (json.loads(line[6:]) for line in lines[:-1])
        )
        assert text.strip()
