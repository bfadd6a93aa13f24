"""`glider serve` on a corporate network: with `server.trust_env: true` the cloud backend's requests go
through the HTTPS_PROXY / HTTP_PROXY forward proxy (a real proxy.py on 127.0.0.1), while the local
backend on 127.0.0.1 goes straight even though the same variables are set."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream
from forward_proxy import ForwardProxy

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])]


def test_cloud_through_the_proxy_local_straight(tmp_path: Path, fake: FakeUpstream) -> None:
    fake.reset()
    with ForwardProxy(tmp_path) as proxy:
        config = (
            "extends: default\n"
            "server: {trust_env: true}\n"
            "backends:\n"
            f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
            f"  origin: {{type: origin, side: cloud, base_url: 'http://upstream.glider.test:{fake.port}'}}\n"
        )
        env = {"GLIDER_HOME": str(tmp_path / "home"), "HTTP_PROXY": proxy.url, "HTTPS_PROXY": proxy.url}
        with GliderServer(config, tmp_path, environ=env) as g, httpx.Client(trust_env=False, timeout=30) as c:
            headers = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
            for text in ("/cloud explain the build", "/local hi"):
                body = {
                    "model": "claude-x",
                    "max_tokens": 16,
                    "messages": [{"role": "user", "content": text}],
                }
                r = c.post(g.url + "/v1/messages", json=body, headers=headers)
                assert r.status_code == 200, r.text
            routes = [d["backend"] for d in g.wait_for("RouteDecided", 2)]
        forwarded = proxy.requests()
    assert routes == ["origin", "ollama"]
    assert [(f["method"], f["host"], f["path"]) for f in forwarded] == [
        ("POST", "upstream.glider.test", "/v1/messages")
    ]
    assert [r.path for r in fake.requests] == ["/v1/messages", "/api/chat"]
    assert fake.requests[0].headers["x-api-key"] == "sk-client"
