"""Cursor's turns on the dashboard, in a real browser: `glider serve` with its Cursor proxy (the
strict fake Cursor origin behind it), one conversation driven by the Cursor-shaped client through
real CONNECT + TLS — a `/local` turn answered here, then a `/cloud` turn relayed to Cursor — then the
Sessions and Overview pages read from the real event log."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from glider_harness import GliderServer
from ui_tab import Tab

from fake_upstream import FakeUpstream

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cursor"))

import cursor_wire as wire
from cursor_client import CursorClient, texts
from fake_cursor import HOSTS, FakeCursor

pytestmark = [pytest.mark.live, pytest.mark.slow]
AGENT = "agent.api5.cursor.sh"
CONV = "6f1c2d3e-cursor-conv-0001"


@pytest.fixture
def glider(tmp_path: Path, fake: FakeUpstream) -> Iterator[GliderServer]:
    fake.reset()
    with FakeCursor() as origin:
        origin.usage = (1200, 6)  # Cursor's turn-ended update carries the turn's counts
        resolve = ", ".join(f'"{h}": "127.0.0.1:{origin.port}"' for h in HOSTS)
        yaml = (
            "extends: default\n"
            "backends:\n"
            f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: fake-model}}\n"
            "cursor:\n"
            "  port: 0\n"
            f"  resolve: {{{resolve}}}\n"
            f"  upstream_ca_file: '{origin.ca_file(tmp_path)}'\n"
            "  stream_wait_seconds: 1\n"
        )
        with GliderServer(yaml, tmp_path, record=False) as g:
            yield g


def _client(g: GliderServer, tmp_path: Path) -> CursorClient:
    return CursorClient(g.app.state.cursor.service.port, str(tmp_path / "home" / "cursor" / "ca.pem"))


def _in_thread(coro: Any) -> None:
    # Playwright's sync API runs an event loop in this thread: the client gets a thread of its own.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coro).result(timeout=120)


def _turns(g: GliderServer, tmp_path: Path) -> None:
    client = _client(g, tmp_path)

    async def go() -> None:
        local, _, _ = await client.turn(AGENT, wire.run_request(CONV, wire.user_action("/local say hello")))
        assert "".join(texts(local)) == "hello from fake ollama fake-model"
        cloud, _, _ = await client.turn(
            AGENT, wire.run_request(CONV, wire.user_action("/cloud plan the refactor"))
        )
        assert texts(cloud) == ["hello from cursor", " (done)"]

    _in_thread(go())


def test_a_cursor_conversation_on_the_sessions_page(glider: GliderServer, tab: Tab, tmp_path: Path) -> None:
    _turns(glider, tmp_path)
    tab.page.goto(glider.url + "/ui/sessions")
    button = tab.page.locator(f'[data-session="{CONV}"]')
    button.wait_for()
    # The conversation is listed as Cursor's, with its two turns, one local and one at Cursor.
    listed = button.inner_text()
    assert "cursor" in listed and "2 requests, 2 turns" in listed, listed
    assert (
        button.locator(".badge.local").inner_text() == "1"
        and button.locator(".badge.cloud").inner_text() == "1"
    )
    assert "/cloud plan the refactor" in listed  # the conversation's last ask
    button.click()
    tab.page.wait_for_selector(f"#session-detail h2:has-text('Session {CONV}')")
    tab.page.wait_for_function("() => document.querySelectorAll('#session-detail .family').length === 2")
    fams = tab.page.locator("#session-detail .family")
    heads = [fams.nth(i).locator("h3").inner_text() for i in range(2)]
    assert heads[0].startswith("“/cloud plan the refactor”") and heads[1].startswith("“/local say hello”"), (
        heads
    )
    rows = [fams.nth(i).locator("tbody tr td").all_inner_texts() for i in range(2)]
    cloud, local = rows
    assert cloud[1:4] == ["new turn", "cloud", "explicit_cloud"] and cloud[4] == "origin · default", cloud
    assert cloud[5].startswith("200")
    assert local[1:4] == ["new turn", "local", "explicit_local"], local
    assert local[4] == "ollama · fake-model" and local[5].startswith("200"), local
    tab.shot("sessions-cursor")
    # The Overview's recent requests and episodes carry the same turns.
    tab.page.goto(glider.url + "/ui/")
    tab.page.wait_for_function("() => document.querySelectorAll('#live-rows tr[data-id]').length === 2")
    live = [r.locator("td").all_inner_texts() for r in tab.page.locator("#live-rows tr[data-id]").all()]
    assert [r[1] for r in live] == ["cloud", "local"], live
    assert live[0][3] == "origin · default" and live[1][3] == "ollama · fake-model", live
    tab.page.wait_for_selector("#episodes td:has-text('/local say hello')")
    # Cursor's own counts of the turn it answered, not an estimate ("0 tokens out" before).
    tab.page.wait_for_selector("#episodes td:has-text('answered by origin status 200, 6 tokens out')")
    tab.shot("overview-cursor")
    assert tab.errors == []


def test_an_abandoned_cursor_run_on_the_sessions_page(glider: GliderServer, tab: Tab, tmp_path: Path) -> None:
    """A run whose stream the client never opened is closed after `cursor.stream_wait_seconds`, and
    the page says so (not a request left waiting forever)."""
    client = _client(glider, tmp_path)
    msg = wire.run_request("conv-abandoned", wire.user_action("/local explain the build"))
    _in_thread(client.append(AGENT, "rid-never-streamed", 0, msg))
    deadline = time.monotonic() + 20
    tab.page.goto(glider.url + "/ui/sessions#session=conv-abandoned")
    while True:  # the page reads the log when it loads: load it until the run's outcome is there
        tab.page.wait_for_selector("#session-detail .family tbody tr")
        cells = tab.page.locator("#session-detail .family tbody tr td").all_inner_texts()
        if cells[5] != "…" or time.monotonic() > deadline:
            break
        time.sleep(0.3)
        tab.page.reload()
    assert cells[1:3] == ["new turn", "local"] and cells[5] == "abandoned 499", cells
    tab.shot("sessions-cursor-abandoned")
    assert tab.errors == []
