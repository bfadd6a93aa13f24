"""Secure by default: the Host check (DNS rebinding) and GLIDER_TOKEN on /api/*, live and as units."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from glider_cli.server.security import allowed_host_names, host_allowed, host_name

pytestmark = pytest.mark.live


def test_host_name_strips_ports_and_brackets() -> None:
    assert host_name("127.0.0.1:8787") == "127.0.0.1"
    assert host_name("[::1]:8787") == "::1"
    assert host_name("LocalHost.") == "localhost"
    assert host_name("example.com") == "example.com"


def test_allowed_names() -> None:
    allowed = allowed_host_names("127.0.0.1", ())
    assert host_allowed("localhost:8787", allowed)
    assert host_allowed("foo.localhost", allowed)
    assert not host_allowed("evil.example:8787", allowed)
    assert not host_allowed(None, allowed)
    # binding all interfaces does not make every name acceptable
    assert not host_allowed("0.0.0.0", allowed_host_names("0.0.0.0", ()))
    assert host_allowed("box.lan", allowed_host_names("0.0.0.0", ("box.lan",)))
    assert host_allowed("anything", allowed_host_names("127.0.0.1", ("*",)))


def test_foreign_host_is_refused_before_any_route(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        r = httpx.get(g.url + "/healthz", headers={"host": "attacker.example"})
        assert r.status_code == 403
        r = httpx.post(g.url + "/v1/messages", json={}, headers={"host": "attacker.example"})
        assert r.status_code == 403
        assert r.json()["type"] == "error"  # Anthropic shape on an Anthropic path
        assert httpx.get(g.url + "/healthz", headers={"host": f"localhost:{g.port}"}).status_code == 200
        assert httpx.get(g.url + "/healthz").status_code == 200
        # Verdicts are remembered per Host value: a refused one stays refused, an allowed one allowed.
        assert httpx.get(g.url + "/healthz", headers={"host": "attacker.example"}).status_code == 403
        assert httpx.get(g.url + "/healthz", headers={"host": f"localhost:{g.port}"}).status_code == 200


def test_allowed_hosts_from_config(tmp_path: Path) -> None:
    cfg = backends_yaml("http://127.0.0.1:9") + "server:\n  allowed_hosts: [glider.internal]\n"
    with GliderServer(cfg, tmp_path) as g:
        assert httpx.get(g.url + "/healthz", headers={"host": "glider.internal:8787"}).status_code == 200
        assert httpx.get(g.url + "/healthz", headers={"host": "other.internal"}).status_code == 403


def test_glider_token_guards_api_routes_only(tmp_path: Path) -> None:
    env = {"GLIDER_TOKEN": "tok-123", "GLIDER_HOME": str(tmp_path / "home")}
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, environ=env) as g:
        assert httpx.get(g.url + "/api/router/lint").status_code == 401
        wrong = httpx.get(g.url + "/api/router/lint", headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = httpx.get(g.url + "/api/router/lint", headers={"authorization": "Bearer tok-123"})
        assert ok.status_code == 200
        assert (
            httpx.get(g.url + "/api/context/recent", headers={"x-glider-token": "tok-123"}).status_code == 200
        )
        # Claude Code's warm-up and the health check are not gated
        assert httpx.head(g.url + "/api/hello").status_code == 200
        assert httpx.get(g.url + "/healthz").status_code == 200
