"""The pack of a real Claude Code first turn, translated to OpenAI Chat, answered by the real local model
(llama.cpp's server with SmolLM2-135M behind the logging relay; skips only when .ci/run could not build it).

The server's own usage figures say what the model evaluated: the pack stays under 1,500 prompt tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from glider_cli.config.settings import TransformSettings
from glider_cli.protocol.translate import request_to
from glider_cli.turns.pack import pack
from llama_server import LoggingRelay

pytestmark = [pytest.mark.live, pytest.mark.slow]

FIXTURES = Path(__file__).parent.parent / "fixtures" / "clients"


def test_the_real_model_answers_the_packed_first_turn_under_1500_prompt_tokens(
    llama_relay: LoggingRelay,
) -> None:
    data = json.loads((FIXTURES / "claude-code-01-first-turn.json").read_text())
    packed = pack("anthropic", data["requests"][0]["body"], TransformSettings())
    body = request_to("openai_chat", "anthropic", packed.body, model="smollm2", max_tokens_cap=8)
    body["stream"] = False
    r = httpx.post(llama_relay.url + "/v1/chat/completions", json=body, timeout=300)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["choices"][0]["message"]["content"].strip()
    assert 100 < out["usage"]["prompt_tokens"] <= 1_500
    [seen] = llama_relay.requests
    assert seen.size < 8_000 and seen.body["messages"][0]["role"] == "system"
    assert "say hi" in json.dumps(seen.body["messages"][-1])
