"""A local backend's 4xx that means "not here" falls back: 404 (Ollama: model not pulled) and a 400
that says the context is too long. Any other local 4xx is the client's error and is relayed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
BODY = {"model": "claude-x", "max_tokens": 32, "messages": [{"role": "user", "content": "say hi"}]}


def _config(url: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{url}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n"
    )


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


@pytest.mark.parametrize(
    ("status", "message", "cause"),
    [
        (404, "model 'qwen-local' not found, try pulling it first", "model not found"),
        (400, "This model's maximum context length is 8192 tokens. However, you requested 9051", "context"),
        (400, "the input length exceeds the context length", "context"),
    ],
)
def test_not_here_4xx_from_the_local_side_goes_to_the_cloud(
    fake: FakeUpstream, tmp_path: Path, status: int, message: str, cause: str
) -> None:
    fake.set_fault(status=status, message=message, paths=("/api/chat",))
    with GliderServer(_config(fake.url), tmp_path) as g:
        r = httpx.post(g.url + "/v1/messages", json=BODY, headers=HEADERS, timeout=30)
        assert r.status_code == 200, r.text
        assert r.json()["content"][0]["text"].startswith("hello from fake anthropic")
        assert "backend=origin" in r.headers["x-glider-route"]
        assert "fallback-from=ollama" in r.headers["x-glider-route"]
        failed = g.wait_for("UpstreamFailed")
        assert failed[0]["backend"] == "ollama" and failed[0]["status"] == status
        assert cause in failed[0]["error"]
        assert g.wait_for("FallbackUsed")[0] == {
            "from": "ollama",
            "to": "origin",
            "reason": f"status {status}",
        }


def test_a_local_400_that_is_not_about_the_context_is_relayed_not_retried(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    fake.set_fault(status=400, message="invalid tool schema", paths=("/api/chat",))
    with GliderServer(_config(fake.url), tmp_path) as g:
        r = httpx.post(g.url + "/v1/messages", json=BODY, headers=HEADERS, timeout=30)
        assert r.status_code == 400
        assert r.json()["type"] == "error" and "invalid tool schema" in r.json()["error"]["message"]
        assert [q.path for q in fake.requests] == ["/api/chat"]
        assert fake.probes[0].path == "/api/tags"  # the capability probe at start
