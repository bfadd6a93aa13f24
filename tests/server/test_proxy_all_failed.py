"""When every attempt failed: what a retrying client needs is kept (the upstream's own error type and
code, retry-after, rate-limit and request-id headers), and the error names each backend tried and
its real cause."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream, closed_port_url

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-x", "gpt-x"], ollama_models=["qwen-local"]),
]

ANTHROPIC = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
LIMITS = {
    "retry-after": "7",
    "x-should-retry": "true",
    "anthropic-ratelimit-requests-remaining": "0",
    "request-id": "req_0123",
}


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _cloud_only(url: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{closed_port_url()}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n"
    )


def test_a_relayed_429_keeps_the_upstream_body_and_the_headers_clients_retry_by(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    fake.set_fault(status=429, body=body, headers=LIMITS, paths=("/v1/messages",))
    with GliderServer(_cloud_only(fake.url), tmp_path) as g:
        req = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "/cloud hi"}]}
        r = httpx.post(g.url + "/v1/messages", json=req, headers=ANTHROPIC, timeout=30)
    assert r.status_code == 429
    assert r.json() == body
    for name, value in LIMITS.items():
        assert r.headers[name] == value


def test_an_openai_clients_insufficient_quota_stays_insufficient_quota(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    body = {
        "error": {
            "message": "You exceeded your quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    fake.set_fault(status=429, body=body, headers={"x-ratelimit-remaining-requests": "0"})
    config = (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{closed_port_url()}', model: qwen-local}}\n"
        f"  openai: {{type: openai, side: cloud, base_url: '{fake.url}/v1', model: gpt-x}}\n"
        "routing:\n  cloud_backend: openai\n"
    )
    with GliderServer(config, tmp_path) as g:
        req = {"model": "gpt-x", "messages": [{"role": "user", "content": "/cloud hi"}]}
        r = httpx.post(g.url + "/v1/chat/completions", json=req, timeout=30)
    assert r.status_code == 429
    assert (
        r.json()["error"]["type"] == "insufficient_quota"
        and r.json()["error"]["code"] == "insufficient_quota"
    )
    assert r.headers["x-ratelimit-remaining-requests"] == "0"


def test_every_backend_tried_is_named_with_its_real_cause(fake: FakeUpstream, tmp_path: Path) -> None:
    fake.set_fault(status=529, message="Overloaded", paths=("/v1/messages",))
    with GliderServer(_cloud_only(fake.url), tmp_path) as g:
        req = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
        r = httpx.post(g.url + "/v1/messages", json=req, headers=ANTHROPIC, timeout=30)
    assert r.status_code == 529
    message = r.json()["error"]["message"]
    assert message.startswith("every backend failed: ")
    assert "ollama: connection refused" in message and "origin: answered 529: Overloaded" in message


def test_a_name_that_does_not_resolve_is_called_so(fake: FakeUpstream, tmp_path: Path) -> None:
    config = (
        "extends: default\n"
        "backends:\n"
        "  ollama: {type: ollama, side: local, base_url: 'http://no-such-host.invalid:11434',"
        " model: qwen-local}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{closed_port_url()}'}}\n"
    )
    with GliderServer(config, tmp_path) as g:
        req = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
        r = httpx.post(g.url + "/v1/messages", json=req, headers=ANTHROPIC, timeout=30)
    assert r.status_code == 502
    message = r.json()["error"]["message"]
    assert "ollama: DNS name not resolved" in message and "origin: connection refused" in message
