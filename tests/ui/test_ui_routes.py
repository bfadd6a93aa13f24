"""The dashboard's routes over HTTP: where a browser lands, what every page response carries, and what
the shipped files may not contain."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from glider_cli.server.ui.routes import CSP, PAGES

pytestmark = pytest.mark.live

STATIC = resources.files("glider_cli.server.ui") / "static"
# Ways to turn a string into markup or code; every page writes server data with textContent only.
HTML_SINKS = re.compile(
    r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(|srcdoc"
)


def test_a_browser_at_the_root_lands_on_the_dashboard(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        page = httpx.get(g.url + "/", headers={"accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert page.status_code == 307 and page.headers["location"] == "/ui/"
        # Non-browser clients get what they always got.
        plain = httpx.get(g.url + "/")
        assert plain.status_code == 200 and plain.text == "glider\n"
        head = httpx.head(g.url + "/", headers={"accept": "text/html"})
        assert head.status_code == 200 and head.content == b""
        assert httpx.get(g.url + "/ui").headers["location"] == "/ui/"


def test_pages_and_files_carry_the_security_headers(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        for name, title in PAGES.items():
            r = httpx.get(g.url + "/ui/" + name)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
            assert r.headers["content-security-policy"] == CSP and "script-src 'self'" in CSP
            assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"
            assert r.headers["cache-control"] == "no-store"
            assert f"<title>{title} · Glider</title>" in r.text
            assert f'src="/ui/static/{name or "overview"}.js"' in r.text and "{{" not in r.text
        for file, kind in (
            ("common.js", "javascript"),
            ("app.css", "text/css"),
            ("icon.svg", "image/svg+xml"),
        ):
            r = httpx.get(g.url + "/ui/static/" + file)
            assert r.status_code == 200 and kind in r.headers["content-type"], file
            assert r.headers["content-security-policy"] == CSP and "etag" in r.headers
        assert httpx.get(g.url + "/ui/static/nope.js").status_code == 404
        assert httpx.get(g.url + "/ui/nope").status_code == 404


def test_shipped_files_write_no_markup_and_fetch_nothing_remote() -> None:
    files = [f for f in STATIC.iterdir() if f.name.endswith((".js", ".css", ".html"))]
    files.append(resources.files("glider_cli.server.ui") / "page.html")
    assert {f.name for f in files} >= {"common.js", "overview.js", "rules.js", "sessions.js", "context.js"}
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert not HTML_SINKS.search(text), f.name
        assert not re.search(r"(?:src|href)=[\"']?(?:https?:)?//", text), f"{f.name} loads something remote"
        assert "@import" not in text and "url(http" not in text, f.name
