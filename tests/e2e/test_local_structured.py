"""Structured output answered by the real llama.cpp server (llama-cpp-python, SmolLM2-135M) through Glider.

llama-cpp-python answers the OpenAI `response_format: json_schema` with a 500; Glider's probe knows the
server by its model list (`owned_by: me`) and sends `{type: json_object, schema}`, which it takes: the
reply is JSON that the schema allows, from the local side, with no fallback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.test_local_model import _config, _serve
from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.fake_serves(models=["claude-x", "gpt-x"])]

SCHEMA = {
    "type": "object",
    # An enum keeps the reply short: a free string lets a small model run to the token cap.
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}, "sure": {"type": "boolean"}},
    "required": ["answer", "sure"],
}


def _check(data: Any) -> None:
    assert isinstance(data, dict) and set(SCHEMA["required"]) <= set(data), data
    assert data["answer"] in ("yes", "no") and isinstance(data["sure"], bool), data


@pytest.mark.parametrize("client", ["openai_chat", "anthropic"])
def test_a_json_schema_request_is_answered_locally_with_json(
    client: str, llama_relay: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    fake.reset()
    with _serve(tmp_path, _config(llama_relay.url, fake.url, max_tokens=96)) as g:
        health = httpx.get(g.url + "/healthz").json()
        llama = next(c for c in health["local"] if c["backend"] == "llama")
        assert llama["structured_output"] == "json_object_schema", llama
        text = "/local Is the sky blue? Answer in JSON."
        if client == "openai_chat":
            body = {
                "model": "gpt-x",
                "messages": [{"role": "user", "content": text}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}},
            }
            r = httpx.post(g.url + "/v1/chat/completions", json=body, timeout=120)
            assert r.status_code == 200, r.text
            reply = r.json()["choices"][0]["message"]["content"]
        else:
            body = {
                "model": "claude-x",
                "max_tokens": 96,
                "messages": [{"role": "user", "content": text}],
                "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
            }
            headers = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
            r = httpx.post(g.url + "/v1/messages", json=body, headers=headers, timeout=120)
            assert r.status_code == 200, r.text
            reply = r.json()["content"][0]["text"]
        route = r.headers["x-glider-route"]
    assert route.startswith("local;") and "fallback" not in route, route
    _check(json.loads(reply))
    sent = [q for q in llama_relay.requests if q.path == "/v1/chat/completions"][-1]
    assert sent.body["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert fake.requests == []
