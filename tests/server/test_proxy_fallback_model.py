"""A local -> cloud fallback sends the cloud a model it serves (issue #13 §3): the client's model to origin or
a cloud backend with no `model`, the cloud backend's own `model` otherwise; never the local model's name.

The cloud is the strict fake upstream: like the real APIs it answers a model it does not serve with a 404,
so these tests fail when Glider sends the local decision's model (`qwen2.5-coder:14b`) to the cloud.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream, closed_port_url

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-x", "gpt-x", "claude-fallback"], ollama_models=["qwen-local"]),
]

ANTHROPIC_HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
# A user's rule that names the local model, as the bundled profiles did before: the decision carries it.
# Not an explicit `/local`, which never falls back to the cloud without its own rule's `fallback`.
RULES = """
routing:
  rules:
    - name: local_word
      priority: 100
      trigger: {type: regex, pattern: 'say hi'}
      action: {target: local, backend: ollama, model: qwen2.5-coder:14b}
"""


def _config(local_url: str, cloud_url: str, *, local: str = "", extra: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{local_url}', model: qwen-local{local}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n" + extra + RULES
    )


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _ask(g: GliderServer, text: str) -> httpx.Response:
    body = {"model": "claude-x", "max_tokens": 32, "messages": [{"role": "user", "content": text}]}
    return httpx.post(g.url + "/v1/messages", json=body, headers=ANTHROPIC_HEADERS, timeout=30)


def test_local_refused_origin_gets_the_clients_model(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(closed_port_url(), fake.url), tmp_path) as g:
        r = _ask(g, "say hi")
        assert r.status_code == 200, r.text
        assert r.json()["content"][0]["text"] == "hello from fake anthropic claude-x"
        assert "fallback-from=ollama" in r.headers["x-glider-route"]
        decided = g.wait_for("RouteDecided")[0]
        assert (decided["backend"], decided["model"]) == ("ollama", "qwen2.5-coder:14b")
    [sent] = fake.requests
    assert sent.path == "/v1/messages" and sent.body["model"] == "claude-x"


def test_local_refused_a_cloud_backend_with_a_model_gets_its_own(fake: FakeUpstream, tmp_path: Path) -> None:
    extra = f"  claude: {{type: anthropic, side: cloud, base_url: '{fake.url}', model: claude-fallback}}\n"
    cfg = _config(closed_port_url(), fake.url, local=", fallback: claude", extra=extra)
    with GliderServer(cfg, tmp_path) as g:
        r = _ask(g, "say hi")
        assert r.status_code == 200, r.text
        assert r.headers["x-glider-route"].startswith("cloud; rule=local_word; backend=claude")
        assert g.wait_for("FallbackUsed")[0] == {"from": "ollama", "to": "claude", "reason": "unreachable"}
    assert [q.body["model"] for q in fake.requests] == ["claude-fallback"]


def test_local_503_openai_client_falls_back_with_its_own_model(fake: FakeUpstream, tmp_path: Path) -> None:
    # The local server is up (and received the decided model), then fails; the cloud gets the client's.
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        fake.serve(ollama_models=["qwen2.5-coder:14b"])
        fake.set_fault(status=503, paths=("/api/chat",))
        body = {"model": "gpt-x", "messages": [{"role": "user", "content": "say hi"}]}
        r = httpx.post(g.url + "/v1/chat/completions", json=body, timeout=30)
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"] == "hello from fake openai_chat gpt-x"
    assert [(q.path, q.body["model"]) for q in fake.requests] == [
        ("/api/chat", "qwen2.5-coder:14b"),
        ("/v1/chat/completions", "gpt-x"),
    ]


def test_without_a_model_in_the_rule_the_local_backend_serves_its_own(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    cfg = _config(fake.url, fake.url).replace(RULES, "")
    with GliderServer(cfg, tmp_path) as g:
        r = _ask(g, "say hi")
        assert r.status_code == 200, r.text
        assert r.headers["x-glider-route"].startswith("local; rule=small_context_local; backend=ollama")
    assert [(q.path, q.body["model"]) for q in fake.requests] == [("/api/chat", "qwen-local")]


def test_a_model_the_local_ollama_has_not_pulled_falls_back_to_the_clients(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    # No injected fault: the strict fake answers Ollama's own 404 for a model it has not pulled.
    cfg = _config(fake.url, fake.url).replace(RULES, "").replace("model: qwen-local", "model: qwen-missing")
    with GliderServer(cfg, tmp_path) as g:
        r = _ask(g, "say hi")
        assert r.status_code == 200, r.text
        assert "fallback-from=ollama" in r.headers["x-glider-route"]
        assert g.wait_for("UpstreamFailed")[0]["status"] == 404
    assert [(q.path, q.body["model"]) for q in fake.requests] == [
        ("/api/chat", "qwen-missing"),
        ("/v1/messages", "claude-x"),
    ]


def test_a_context_the_local_window_cannot_hold_falls_back(fake: FakeUpstream, tmp_path: Path) -> None:
    with FakeUpstream(ollama_models=["qwen-local"], context_window=200) as local:
        cfg = _config(local.url, fake.url).replace(RULES, "")
        with GliderServer(cfg, tmp_path) as g:
            r = _ask(g, "say hi " + "word " * 400)
            assert r.status_code == 200, r.text
            assert "fallback-from=ollama" in r.headers["x-glider-route"]
            assert g.wait_for("UpstreamFailed")[0]["status"] == 400
        assert [q.path for q in local.requests] == ["/api/chat"]
    assert [(q.path, q.body["model"]) for q in fake.requests] == [("/v1/messages", "claude-x")]
