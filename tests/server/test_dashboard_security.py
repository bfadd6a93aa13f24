"""What the dashboard adds to the security gate: cross-site state changes refused, the token cookie."""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from glider_cli.server.security import SecurityMiddleware, cookie_value, same_origin, token_cookie

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
        # Issue 14: a foreign Origin is refused on every endpoint, reads included.
        assert httpx.get(g.url + "/api/router/lint", headers=evil).status_code == 403
        assert httpx.get(g.url + "/api/router/lint").status_code == 200


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


def test_the_token_cookie_is_read_from_any_of_several_cookie_headers() -> None:
    """HTTP/2 clients and some proxies send each cookie in a header of its own: they are read as one."""
    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    gate = SecurityMiddleware(app, bound_host="127.0.0.1", allowed_hosts=(), token="tok-789")

    def call(*cookies: bytes) -> int:
        sent: list[Any] = []

        async def receive() -> Any:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Any) -> None:
            sent.append(message)

        headers = [(b"host", b"127.0.0.1:8787"), *((b"cookie", c) for c in cookies)]
        scope = {"type": "http", "method": "GET", "path": "/api/router/lint", "headers": headers}
        scope["server"] = ("127.0.0.1", 8787)
        _run_now(gate(scope, receive, send))
        return int(sent[0]["status"])

    assert call(b"a=1", b"glider_token_8787=tok-789", b"b=2") == 200
    assert call(b"glider_token_8787=tok-789; a=1", b"b=2") == 200
    assert call(b"a=1", b"glider_token_8787=wrong") == 401
    assert call(b"a=1", b"b=2") == 401
    assert reached == ["/api/router/lint", "/api/router/lint"]


def _run_now(coro: Coroutine[Any, Any, None]) -> None:
    """Run an ASGI call that never waits (no loop: the browser tests' session keeps one running)."""
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    raise AssertionError("the call waited on something")
