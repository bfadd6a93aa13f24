"""A client's `max_tokens` is a ceiling, not a need (issue 39, point 5): Claude Code asks for 128,000
output tokens on every request; a local backend with a window of 8,192 and no `max_tokens` of its own
gets the request with the output its window leaves after the pack, and the decision's trace says so.
Below the floor (1,024 tokens) the gate still refuses.

The README's llama.cpp backend (`type: openai`, `context_window: 8192`, `tools: false`, no `max_tokens`),
with the strict fake as that server and as the origin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer
from test_routing_flows import captured

from fake_upstream import FakeUpstream

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-opus-5-5", "claude-x", "smollm2"], ollama_models=["qwen-local"]),
]


def _config(url: str, window: int = 8192) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        "  llama:\n"
        "    type: openai\n"
        "    side: local\n"
        f"    base_url: {url}/v1\n"
        "    model: smollm2\n"
        f"    context_window: {window}\n"
        "    tools: false\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n"
        "routing:\n"
        "  local_backend: llama\n"
    )


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _claude_code_first_turn(text: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    path, headers, body = captured("claude-code-01-first-turn.json")[0]
    body["messages"][0]["content"][-1]["text"] = text
    assert body["max_tokens"] == 128000 and body["stream"] is True
    return path, headers, body


def _cut_line(decided: dict[str, Any], rule: str) -> str:
    line = next(t for t in decided["trace"] if t["rule"] == rule and t["matched"])
    return str(line["reason"])


def test_claude_codes_local_turn_gets_the_output_the_window_leaves(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    path, headers, body = _claude_code_first_turn("say hi /local")
    with GliderServer(_config(fake.url), tmp_path) as g:
        r = httpx.post(g.url + path, headers=headers, json=body, timeout=30)
        assert r.status_code == 200, r.text
        assert r.headers["x-glider-route"].startswith("local; rule=explicit_local; backend=llama")
        decided = g.wait_for("RouteDecided")[0]
    [sent] = fake.requests
    assert sent.path == "/v1/chat/completions"
    given = sent.body["max_tokens"]
    assert 1024 <= given < 8192 - 400, given
    said = _cut_line(decided, "explicit_local")
    assert f"max_tokens 128,000 cut to {given:,}: what window 8,192 leaves after the pack" in said, said


def test_another_local_rule_is_not_passed_over_for_the_clients_ceiling(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    """Before, the gate refused `small_context_local` (pack + 128,000 > 8,192) and the next rule sent
    the request to the cloud without a word to the person."""
    body = {"model": "claude-x", "max_tokens": 128000, "messages": [{"role": "user", "content": "say hi"}]}
    with GliderServer(_config(fake.url), tmp_path) as g:
        r = httpx.post(g.url + "/v1/messages", headers={"x-api-key": "k"}, json=body, timeout=30)
        assert r.status_code == 200, r.text
        assert r.headers["x-glider-route"].startswith("local; rule=small_context_local; backend=llama")
        decided = g.wait_for("RouteDecided")[0]
    assert [q.path for q in fake.requests] == ["/v1/chat/completions"]
    assert "max_tokens 128,000 cut to" in _cut_line(decided, "small_context_local")


def test_a_ceiling_that_fits_is_sent_as_it_is(fake: FakeUpstream, tmp_path: Path) -> None:
    body = {
        "model": "claude-x",
        "max_tokens": 300,
        "messages": [{"role": "user", "content": "/local say hi"}],
    }
    with GliderServer(_config(fake.url), tmp_path) as g:
        r = httpx.post(g.url + "/v1/messages", headers={"x-api-key": "k"}, json=body, timeout=30)
        assert r.status_code == 200, r.text
        decided = g.wait_for("RouteDecided")[0]
    assert fake.requests[0].body["max_tokens"] == 300
    assert "cut to" not in _cut_line(decided, "explicit_local")


def test_under_the_floor_an_explicit_local_gets_the_gates_error(fake: FakeUpstream, tmp_path: Path) -> None:
    path, headers, body = _claude_code_first_turn("say hi /local")
    with GliderServer(_config(fake.url, window=1800), tmp_path) as g:
        r = httpx.post(g.url + path, headers=headers, json=body, timeout=30)
    assert r.status_code == 400, r.text
    said = r.json()["error"]["message"]
    assert "output (the least a local reply gets) > window 1,800" in said, said
    assert fake.requests == []


def test_an_openai_client_passed_through_to_the_local_server_gets_the_cut_too(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    """Same wire (OpenAI Chat to an OpenAI-compatible local server): the body passes through with its
    `max_completion_tokens` cut, and a `max_tokens` that fits is left as it is."""
    ask = {"role": "user", "content": "/local say hi"}
    with GliderServer(_config(fake.url), tmp_path) as g:
        for extra in ({"max_completion_tokens": 128000}, {"max_tokens": 500}):
            body = {"model": "gpt-x", "messages": [ask], **extra}
            r = httpx.post(g.url + "/v1/chat/completions", json=body, timeout=30)
            assert r.status_code == 200, r.text
    cut, fits = (q.body for q in fake.requests)
    assert 1024 <= cut["max_completion_tokens"] < 8192 and "max_tokens" not in cut, cut
    assert fits["max_tokens"] == 500
