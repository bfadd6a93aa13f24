"""The dashboard in a real browser (Chromium through Playwright): a request that failed shows as failed,
with its time, and a request the capability gate refused shows as refused — live on the overview, and
after a reload (from the request feed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer
from ui_tab import Tab

from fake_upstream import FakeUpstream, closed_port_url

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.fake_serves(models=["claude-sonnet-4-5"], ollama_models=["qwen-local"]),
]

HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def send(url: str, text: str) -> httpx.Response:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 32, "messages": [{"role": "user", "content": text}]}
    return httpx.post(url + "/v1/messages", json=body, headers=HEADERS, timeout=30)


@pytest.fixture
def glider(tmp_path: Path, fake: FakeUpstream) -> Iterator[GliderServer]:
    config = (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{closed_port_url()}', model: qwen-local,"
        " fallback: none, context_window: 1024, max_tokens: 64}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
    )
    with GliderServer(config, tmp_path, record=False) as g:
        yield g


def _row_cells(tab: Tab, n: int) -> list[str]:
    return tab.page.locator("#live-rows tr[data-id]").nth(n).locator("td").all_inner_texts()


def test_failed_and_refused_requests_show_their_outcome_and_time(glider: GliderServer, tab: Tab) -> None:
    tab.page.goto(glider.url + "/ui/")
    tab.page.wait_for_selector("#live-state.on")
    assert send(glider.url, "/local fix the typo").status_code == 502
    tab.page.wait_for_function(
        "() => { const r = document.querySelector('#live-rows tr[data-id]');"
        " return r && r.innerText.includes('failed 502'); }",
        timeout=5000,
    )
    cells = _row_cells(tab, 0)
    assert cells[5] == "failed 502" and cells[6].endswith("ms"), cells
    assert send(glider.url, "/local summarise: " + "lorem ipsum dolor " * 300).status_code == 400
    tab.page.wait_for_function(
        "() => document.querySelectorAll('#live-rows tr[data-id]').length === 2"
        " && document.querySelector('#live-rows tr[data-id]').innerText.includes('refused 400')",
        timeout=5000,
    )
    refused = _row_cells(tab, 0)
    assert refused[2] == "explicit_local" and "window 1,024" in refused[7], refused
    tab.shot("overview-failed-live")
    # After a reload the rows come from the request feed, with the same outcomes.
    tab.page.reload()
    tab.page.wait_for_function("() => document.querySelectorAll('#live-rows tr[data-id]').length === 2")
    assert [_row_cells(tab, i)[5] for i in (0, 1)] == ["refused 400", "failed 502"]
    assert _row_cells(tab, 1)[6].endswith("ms")
    tab.shot("overview-failed-reloaded")
    assert tab.errors == []
