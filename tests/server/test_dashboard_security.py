"""What the dashboard adds to the security gate: cross-site state changes refused, the token cookie."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from glider_cli.server.security import cookie_value, same_origin, token_cookie

pytestmark = pytest.mark.live


def test_same_origin_rules() -> None:
    host = b"127.0.0.1:8787"
    assert same_origin(b"http://127.0.0.1:8787", None, host)
    assert same_origin(b"HTTP://127.0.0.1:8787", b"same-origin", host)
    assert not same_origin(b"http://localhost:8787", None, host)  # another origin, same machine
    assert not same_origin(b"http://127.0.0.1:9999", None, host)  # another port is another origin
    assert not same_origin(b"null", None, host)
    assert not same_origin(b"https://evil.example", None, host)
    assert same_origin(None, b"same-origin", host) and same_origin(None, b"none", host)
    assert not same_origin(None, b"cross-site", host) and not same_origin(None, b"same-site", host)
    assert same_origin(None, None, host)  # curl, the SDKs, the CLI: not a browser
    assert same_origin(b"http://glider.test", None, b"glider.test:80")
    assert cookie_value(b"a=1; glider_token_8787=s3cret ; b=2", b"glider_token_8787") == b"s3cret"
    assert cookie_value(b"glider_token_87870=x", b"glider_token_8787") is None
    assert token_cookie(8787) == "glider_token_8787"


def test_cross_site_post_is_refused_without_a_token(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        url = g.url + "/api/context/prune"
        evil = {"origin": "https://evil.example", "content-type": "application/x-www-form-urlencoded"}
        r = httpx.post(url, content=b"dry_run=false", headers=evil)
        assert r.status_code == 403 and r.json()["error"]["message"] == "cross-site request refused"
        assert (
            httpx.post(url, json={"dry_run": True}, headers={"sec-fetch-site": "cross-site"}).status_code
            == 403
        )
        assert httpx.post(url, json={"dry_run": True}, headers={"origin": g.url}).status_code == 200
        assert httpx.post(url, json={"dry_run": True}).status_code == 200  # no browser headers: the CLI
        idx = httpx.post(g.url + "/api/context/index-tree", json={"path": str(tmp_path)}, headers=evil)
        assert idx.status_code == 403
        # Reads are not state changes; the model endpoints are not the dashboard's.
        assert httpx.get(g.url + "/api/router/lint", headers=evil).status_code == 200


def test_the_token_cookie_from_the_dashboard_link(tmp_path: Path) -> None:
    env = {"GLIDER_TOKEN": "tok-456", "GLIDER_HOME": str(tmp_path / "home")}
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, environ=env) as g, httpx.Client() as c:
        assert c.get(g.url + "/ui/rules?token=nope").status_code == 401
        r = c.get(g.url + "/ui/rules?token=tok-456")
        assert r.status_code == 303 and r.headers["location"] == "/ui/rules"
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"glider_token_{g.port}=tok-456;")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert c.get(g.url + "/api/router/lint").status_code == 200  # the client kept the cookie
        assert (
            httpx.get(g.url + "/api/router/lint", headers={"cookie": "glider_token_1=tok-456"}).status_code
            == 401
        )
        assert (
            httpx.get(g.url + "/api/router/lint", headers={"cookie": f"glider_token_{g.port}=x"}).status_code
            == 401
        )
        assert httpx.get(g.url + "/ui/").status_code == 200  # the page itself holds no data
        # The cookie authenticates; it does not make a cross-site call same-origin.
        evil = c.post(
            g.url + "/api/context/prune", json={"dry_run": True}, headers={"origin": "http://x.test"}
        )
        assert evil.status_code == 403


def test_without_a_token_the_query_is_dropped(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        r = httpx.get(g.url + "/ui/?token=anything")
        assert r.status_code == 303 and r.headers["location"] == "/ui/" and "set-cookie" not in r.headers
