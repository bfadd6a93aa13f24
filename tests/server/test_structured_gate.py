"""Structured output and the capability gate: a local backend that cannot constrain its output to a JSON
Schema (`structured_output: false`) says so in the probe (/healthz), and the gate keeps requests that ask
for one away from it; a backend that can gets the schema in its own words."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["fake-model"])]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _config(url: str, local: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{url}', model: fake-model{local}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n"
    )


def _ask(g: GliderServer, text: str) -> httpx.Response:
    body = {
        "model": "claude-x",
        "max_tokens": 200,
        "messages": [{"role": "user", "content": text}],
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
    }
    return httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def test_a_backend_that_cannot_do_structured_output_is_gated(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, ", structured_output: false"), tmp_path) as g:
        health = httpx.get(g.url + "/healthz").json()
        assert health["local"][0]["structured_output"] == "none"
        r = _ask(g, "/local name this module")
        assert r.status_code == 400, r.text
        message = r.json()["error"]["message"]
        assert "explicit_local" in message and "structured output" in message, message
        assert fake.requests == []


def test_a_backend_that_can_gets_the_schema_in_its_own_words(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url), tmp_path) as g:
        r = _ask(g, "/local name this module")
    assert r.status_code == 200, r.text
    sent = fake.requests[-1]
    assert sent.path == "/api/chat" and sent.body["format"] == SCHEMA
