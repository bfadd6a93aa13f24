"""The dashboard in a real browser (Chromium through Playwright): a local answer that could not be used and
went to the cloud shows as escalated, with the reason and the local backend, live on the overview and
after a reload (from the request feed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from glider_harness import GliderServer
from ui_tab import Tab

from fake_upstream import FakeUpstream, ToolReply
from server.test_escalate_reply import PROMPT, config, post

pytestmark = [pytest.mark.live, pytest.mark.slow]

NOTE = "escalated from llama: bad_tool_name"


def test_an_escalated_request_shows_why(tmp_path: Path, tab: Tab) -> None:
    with (
        FakeUpstream(models=["smol"]) as local,
        FakeUpstream(models=["claude-x"]) as cloud,
        GliderServer(config(local.url, cloud.url), tmp_path, record=False) as g,
    ):
        local.set_reply(text="", tool=ToolReply("Delete", {"file_path": "x"}))
        tab.page.goto(g.url + "/ui/")
        tab.page.wait_for_selector("#live-state.on")
        assert post(g, "anthropic", PROMPT, True).status_code == 200
        tab.page.wait_for_function(
            "(note) => { const r = document.querySelector('#live-rows tr[data-id]');"
            " return r && r.innerText.includes(note); }",
            arg=NOTE,
            timeout=5000,
        )
        tab.shot("overview-escalated-live")
        tab.page.reload()
        tab.page.wait_for_function(
            "(note) => { const r = document.querySelector('#live-rows tr[data-id]');"
            " return r && r.innerText.includes(note); }",
            arg=NOTE,
            timeout=5000,
        )
        cells = tab.page.locator("#live-rows tr[data-id]").nth(0).locator("td").all_inner_texts()
        assert cells[2] == "small_local" and "origin" in cells[3], cells
        assert tab.errors == []
