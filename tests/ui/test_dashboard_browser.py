"""The dashboard in a real browser (Chromium through Playwright) against a live `glider serve` app
with its real event writer, the fake upstream as every backend."""

from __future__ import annotations

import http.server
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml
from ui_tab import Tab

from fake_upstream import FakeUpstream
from glider_cli.delegate import continuity
from glider_cli.delegate.entry import Entry
from glider_cli.paths import Paths

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.fake_serves(models=["claude-sonnet-4-5", "glider-auto"], ollama_models=["qwen-local"]),
]

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "store" / "polyglot"
HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
PAGES = {"overview": "", "rules": "rules", "sessions": "sessions", "context": "context"}
# What each page shows once its data has loaded (an empty home).
READY = {
    "overview": "#getting-started h2",
    "rules": "#rules table",
    "sessions": "#session-list .empty",
    "context": "#query-form",
}


def send(url: str, text: str, session: str = "sess-1") -> httpx.Response:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 32, "messages": [{"role": "user", "content": text}]}
    return httpx.post(
        url + "/v1/messages", json=body, headers={**HEADERS, "x-claude-code-session-id": session}
    )


@pytest.fixture
def glider(tmp_path: Path, fake: FakeUpstream) -> Iterator[GliderServer]:
    with GliderServer(backends_yaml(fake.url), tmp_path, record=False) as g:
        yield g


def test_each_page_loads_with_no_console_errors(glider: GliderServer, tab: Tab, dark_tab: Tab) -> None:
    for t, scheme in ((tab, "light"), (dark_tab, "dark")):
        for name, path in PAGES.items():
            t.page.goto(glider.url + "/ui/" + path)
            t.page.wait_for_selector(READY[name])
            assert t.page.title() == f"{name.title()} · Glider"
            assert t.page.locator(f'nav a[aria-current="page"][data-nav="{name}"]').count() == 1
            t.shot(f"empty-{name}-{scheme}")
        assert t.errors == []
    # A fresh home says what to do next, with this server's own address.
    tab.page.goto(glider.url + "/ui/")
    tab.page.wait_for_selector("#getting-started h2")
    hint = tab.page.locator("#getting-started").inner_text()
    assert f"ANTHROPIC_BASE_URL={glider.url} claude" in hint and f"OPENAI_BASE_URL={glider.url}/v1" in hint


def test_the_overview_works_from_the_keyboard(glider: GliderServer, tab: Tab) -> None:
    assert send(glider.url, "/local fix the typo", session="kb").status_code == 200
    tab.page.goto(glider.url + "/ui/")
    tab.page.wait_for_selector("#live-rows tr[data-id]")
    tab.page.keyboard.press("Tab")
    assert tab.page.evaluate("document.activeElement.className") == "skip"
    tab.page.keyboard.press("Enter")
    assert tab.page.evaluate("document.activeElement.id") == "main"
    for _ in range(40):  # Tab on until the window switch has the focus
        tab.page.keyboard.press("Tab")
        if tab.page.evaluate("document.activeElement.dataset.window") == "day":
            break
    with tab.page.expect_response(lambda r: "/api/events/stats?window=day" in r.url):
        tab.page.keyboard.press("Space")
    assert tab.page.get_attribute("[data-window=day]", "aria-pressed") == "true"
    assert tab.page.get_attribute("[data-window=hour]", "aria-pressed") == "false"
    tab.page.goto(glider.url + "/ui/sessions")
    tab.page.wait_for_selector(".family")
    tab.page.focus("[data-session=kb]")
    tab.page.keyboard.press("Enter")
    tab.page.wait_for_selector("#session-detail h2:has-text('Session kb')")
    assert tab.errors == []


def test_an_episode_is_its_prompt_s_with_the_title_listed_under_it(glider: GliderServer, tab: Tab) -> None:
    # Claude Code's title request for the prompt (CLIENTS.md): it rides along the turn (issue 39 §4).
    assert send(glider.url, "/local rename the helper", session="sess-t").status_code == 200
    title = "<session>\n/local rename the helper\n</session>\n\nWrite the title in the user's language."
    assert send(glider.url, title, session="sess-t").status_code == 200
    tab.page.goto(glider.url + "/ui/")
    row = tab.page.locator("#episodes tr", has_text="/local rename the helper")
    row.wait_for()
    row.locator(".side-requests li").wait_for()
    cells = row.locator("td").all_inner_texts()
    assert cells[2] == "local via ollama (rule explicit_local)"
    assert cells[3].startswith("answered locally by ollama/qwen-local status 200")
    (side,) = row.locator(".side-requests li").all_inner_texts()
    assert side.startswith("title: local via ollama") and "answered locally" in side
    tab.shot("overview-episode-title")
    assert tab.errors == []


def test_a_request_through_the_proxy_appears_live_on_overview(glider: GliderServer, tab: Tab) -> None:
    tab.page.goto(glider.url + "/ui/")
    tab.page.wait_for_selector("#live-state.on")
    sent = time.monotonic()
    assert send(glider.url, "/local fix the typo in the README").status_code == 200
    row = tab.page.locator("#live-rows tr[data-id]")
    row.first.wait_for(timeout=1000)
    assert time.monotonic() - sent < 1.0
    tab.page.wait_for_function(
        "() => document.querySelector('#live-rows tr[data-id]').innerText.includes('200')", timeout=2000
    )
    cells = row.first.locator("td").all_inner_texts()
    assert cells[1] == "local" and cells[2] == "explicit_local" and cells[3].startswith("ollama")
    assert cells[4] == "new turn" and cells[6].endswith("ms")
    assert tab.page.locator("#getting-started").is_hidden()
    # The counts and the episode follow without a reload.
    tab.page.wait_for_function("() => document.querySelector('#tiles .tile .n').textContent === '1'")
    tab.page.wait_for_selector("#episodes td:has-text('/local fix the typo in the README')")
    assert send(glider.url, "/cloud design the cache layer").status_code == 200
    tab.page.wait_for_function("() => document.querySelectorAll('#live-rows tr[data-id]').length === 2")
    assert (
        tab.page.locator("#live-rows tr[data-id]").first.locator("td").nth(2).inner_text() == "explicit_cloud"
    )
    tab.page.wait_for_selector("#chart svg rect.bar-cloud")
    # The backends' health carries what the capability probe found (the fake Ollama's pulled model).
    tab.page.wait_for_selector("#backends td:has-text('qwen-local:latest')")
    tab.shot("overview-live")
    tab.page.goto(glider.url + "/ui/sessions")
    tab.page.wait_for_selector(".family")
    assert tab.page.locator(".family").count() == 2
    tab.shot("sessions")
    assert tab.errors == []


def test_sessions_show_a_family_with_its_tool_result_going_home(glider: GliderServer, tab: Tab) -> None:
    tools = [
        {
            "name": "Bash",
            "description": "run",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        }
    ]
    first = {"role": "user", "content": "/cloud run the tests GLIDER_TOOL:Bash"}
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "tools": tools, "messages": [first]}
    h = {**HEADERS, "x-claude-code-session-id": "sess-tools"}
    reply = httpx.post(glider.url + "/v1/messages", json=body, headers=h).json()
    use = next(b for b in reply["content"] if b["type"] == "tool_use")
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "3 passed"}],
    }
    body["messages"] = [first, {"role": "assistant", "content": reply["content"]}, result]
    assert httpx.post(glider.url + "/v1/messages", json=body, headers=h).status_code == 200
    tab.page.goto(glider.url + "/ui/sessions#session=sess-tools")
    tab.page.wait_for_selector(".family tbody tr:nth-child(2)")
    assert tab.page.locator(".family").count() == 1
    rows = [r.locator("td").all_inner_texts() for r in tab.page.locator(".family tbody tr").all()]
    assert [r[1] for r in rows] == ["new turn", "tool result"] and [r[2] for r in rows] == ["cloud", "cloud"]
    assert "sticky" in rows[1][7]  # the family is bound after /cloud: the follow-on stays off local
    tab.shot("sessions-tool-family")
    assert tab.errors == []


def test_the_playground_shows_the_trace(glider: GliderServer, tab: Tab) -> None:
    tab.page.goto(glider.url + "/ui/rules")
    tab.page.fill("#explain-input", "/local please rename this variable")
    tab.page.click("#explain-form button[type=submit]")
    tab.page.wait_for_selector("#explain-decision")
    body = {
        "protocol": "anthropic",
        "request": {
            "model": "glider-auto",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "/local please rename this variable"}],
        },
    }
    core = httpx.post(glider.url + "/api/router/explain", json=body).json()
    shown = tab.page.locator("#explain-decision").inner_text()
    assert core["rule"] in shown and "local" in shown
    rows = tab.page.locator("#explain-decision tbody tr")
    assert rows.count() == len(core["trace"])
    first = rows.first.locator("td").all_inner_texts()
    assert first[1] == core["trace"][0]["rule"] and first[2] == (
        "yes" if core["trace"][0]["matched"] else "no"
    )
    # A script with an error: reported at line:column.
    script = "def evaluate(request):\n    return undefined_name\n"
    tab.page.fill("#parse-input", script)
    tab.page.keyboard.press("Control+Enter")
    tab.page.wait_for_selector("#parse-result li")
    e = httpx.post(glider.url + "/api/playground/parse", json={"source": script}).json()["errors"][0]
    assert (e["line"], e["column"]) == (2, 12)
    assert tab.page.locator("#parse-result li code").first.inner_text() == f"{e['line']}:{e['column']}"
    tab.shot("rules-playground")
    assert tab.errors == []


def test_a_query_returns_rows_and_an_entity_its_neighbourhood(
    glider: GliderServer, tab: Tab, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    tab.page.goto(glider.url + "/ui/context")
    tab.page.fill("#index-path", str(repo))
    tab.page.click("#index-form button[type=submit]")  # a same-origin POST from the page itself
    tab.page.wait_for_selector("#upkeep-result pre:has-text('\"files\": 13')")
    tab.page.fill("#q", "* kind=file helpers")
    tab.page.press("#q", "Enter")
    tab.page.wait_for_selector("#query-result tbody tr td code")
    ids = tab.page.locator("#query-result tbody tr td:first-child").all_inner_texts()
    assert f"file:{repo}/pkg/helpers.py" in ids
    tab.page.fill("#explain-id", f"file:{repo}/pkg/helpers.py")
    tab.page.click("#explain-form button[type=submit]")
    tab.page.wait_for_selector("#explain-graph svg.graph g.node.center")
    nodes = tab.page.locator("#explain-graph svg.graph g.node:not(.center)")
    assert nodes.count() >= 1
    tab.shot("context-explain")
    # Keyboard: focus a neighbour and press Enter to explain it in turn.
    target = nodes.first.get_attribute("aria-label") or ""
    nodes.first.focus()
    tab.page.keyboard.press("Enter")
    tab.page.wait_for_function(
        "id => document.querySelector('#explain-id').value === id", arg=target.split(" ", 1)[1]
    )
    tab.page.wait_for_selector("#explain-graph svg.graph g.node.center")
    assert tab.errors == []


def test_with_glider_token_the_link_signs_the_browser_in(
    tmp_path: Path, fake: FakeUpstream, tab: Tab
) -> None:
    env = {"GLIDER_TOKEN": "tok-789", "GLIDER_HOME": str(tmp_path / "home")}
    with GliderServer(backends_yaml(fake.url), tmp_path, record=False, environ=env) as g:
        tab.page.goto(g.url + "/ui/rules")
        tab.page.wait_for_selector("#notice:not([hidden])")
        assert "/ui/rules?token=<GLIDER_TOKEN>" in tab.page.locator("#notice").inner_text()
        tab.errors.clear()  # the refused fetches log their 401s
        tab.page.goto(g.url + "/ui/?token=tok-789")
        assert tab.page.url == g.url + "/ui/"  # the token does not stay in the address bar
        (cookie,) = tab.page.context.cookies()
        assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (
            f"glider_token_{g.port}",
            True,
            "Strict",
        )
        tab.page.wait_for_selector("#live-state.on")
        assert send(g.url, "/local tidy the imports").status_code == 200
        tab.page.locator("#live-rows tr[data-id]").first.wait_for(timeout=1000)
        assert tab.page.locator("#notice").is_hidden()
        assert tab.errors == []
        tab.page.goto("about:blank")  # ends the live stream before the server stops


def test_continuity_shows_the_block_a_delegate_would_get(
    glider: GliderServer, tab: Tab, tmp_path: Path
) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    paths = Paths(home=tmp_path / "home")
    for text in ("the parser test fails on empty input", "we restyled the header"):
        continuity.append(paths, ws, Entry(kind="turn", text=text, source_cli="claude"))
    tab.page.goto(glider.url + "/ui/context")
    tab.page.wait_for_function(f"() => document.querySelector('#workspace').value === {str(ws)!r}")
    tab.page.click("#show-record")
    tab.page.wait_for_selector("#continuity-result td:has-text('we restyled the header')")
    tab.page.fill("#task", "fix the parser test")
    tab.page.click("#show-block")
    tab.page.wait_for_selector("#block-text")
    assert "the parser test fails on empty input" in tab.page.locator("#block-text").inner_text()
    assert tab.page.locator("#continuity-result tbody tr").count() == 2
    tab.shot("context-continuity")
    assert tab.errors == []


def test_user_text_is_rendered_as_text(glider: GliderServer, tab: Tab) -> None:
    evil = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script> explain this'
    assert send(glider.url, evil, session="<b>s</b>").status_code == 200
    for path, where in (("", "#episodes"), ("sessions", "#session-detail")):
        tab.page.goto(glider.url + "/ui/" + path)
        tab.page.wait_for_selector(f"{where} :text('explain this')")
        assert evil in tab.page.locator(where).inner_text()
        assert tab.page.locator("main img").count() == 0 and tab.page.locator("main script").count() == 0
        assert tab.page.evaluate("window.__xss") is None
    assert "<b>s</b>" in tab.page.locator("#session-list").inner_text()
    tab.shot("sessions-xss-inert")
    assert tab.errors == []


class _Attacker(http.server.BaseHTTPRequestHandler):
    """A page on another site that auto-submits a form to Glider's prune endpoint."""

    target = ""

    def do_GET(self) -> None:
        body = (
            '<!doctype html><form id="f" method="POST" action="' + self.target + '">'
            '<input name="dry_run" value="false"></form>'
            '<script>document.getElementById("f").submit()</script>'
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_cross_site_form_post_is_refused(glider: GliderServer, tab: Tab, tmp_path: Path) -> None:
    context = tmp_path / "home" / "context"
    context.mkdir(parents=True, exist_ok=True)
    old = context / "events-2020-01-01.jsonl"
    old.write_text("")
    _Attacker.target = glider.url + "/api/context/prune"
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    attack = tab.page.context.new_page()  # its console shows the refused POST's 403: not watched
    try:
        attack.goto(f"http://localhost:{site.server_address[1]}/attack")
        attack.wait_for_url(_Attacker.target)
        assert "cross-site request refused" in attack.content()
    finally:
        attack.close()
        site.shutdown()
        site.server_close()
    assert old.exists()
    # The dashboard's own button is a same-origin POST, and does prune.
    tab.page.on("dialog", lambda d: d.accept())
    tab.page.goto(glider.url + "/ui/context")
    tab.page.click("#prune-apply")
    tab.page.wait_for_selector("#upkeep-result pre:has-text('\"applied\": true')")
    assert not old.exists()
    assert tab.errors == []
