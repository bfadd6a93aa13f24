"""No web page can drive, freeze or bill the proxy: a foreign Origin, a cross-site fetch and the
content types a browser sends without a preflight are refused on every endpoint, the model API
included; real clients (no Origin, application/json) are not."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])]

BODY = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "/cloud hi"}]}
PAGE = "https://evil.example"


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
    ("path", "headers", "status"),
    [
        ("/v1/messages", {"origin": PAGE}, 403),
        ("/v1/chat/completions", {"origin": "null"}, 403),
        ("/v1/messages", {"sec-fetch-site": "cross-site"}, 403),
        ("/v1/messages", {"content-type": "text/plain;charset=UTF-8"}, 415),
        ("/v1/messages", {"content-type": "application/x-www-form-urlencoded"}, 415),
        ("/api/router/explain", {"content-type": "text/plain"}, 415),
        ("/api/playground/parse", {"origin": PAGE, "content-type": "text/plain"}, 403),
        ("/api/context/prune", {"content-type": "multipart/form-data; boundary=x"}, 415),
    ],
)
def test_what_a_web_page_can_send_is_refused_and_nothing_is_forwarded(
    fake: FakeUpstream, tmp_path: Path, path: str, headers: dict[str, str], status: int
) -> None:
    import json

    with GliderServer(_config(fake.url), tmp_path) as g:
        r = httpx.post(g.url + path, content=json.dumps(BODY), headers={"x-api-key": "sk-user", **headers})
    assert r.status_code == status
    assert "error" in r.json()
    assert fake.requests == []  # no credit spent


def test_a_preflight_gets_no_cors_headers(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url), tmp_path) as g:
        r = httpx.options(
            g.url + "/v1/messages",
            headers={"origin": PAGE, "access-control-request-method": "POST"},
        )
    assert r.status_code == 403
    assert not [k for k in r.headers if k.lower().startswith("access-control-")]


def test_real_clients_and_the_dashboard_s_own_origin_are_served(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url), tmp_path) as g:
        plain = httpx.post(g.url + "/v1/messages", json=BODY, headers={"x-api-key": "sk-user"})
        own = httpx.post(g.url + "/v1/messages", json=BODY, headers={"x-api-key": "sk-user", "origin": g.url})
    assert plain.status_code == 200 and own.status_code == 200
    assert len(fake.requests) == 2
