"""The Overview's Backends table fits a 1,400 px window: every column, the Breaker column included, is
fully visible without scrolling the table sideways (issue 39, point 8c: it was cut at 1,400 px)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer
from ui_tab import Tab

from fake_upstream import FakeUpstream

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.fake_serves(models=["claude-sonnet-4-5"], ollama_models=["qwen2.5-coder:14b"]),
]

HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def test_the_breaker_column_is_fully_visible_at_1400_px(tmp_path: Path, fake: FakeUpstream, tab: Tab) -> None:
    fake.reset()
    fake.set_fault(status=503, message="overloaded", paths=("/api/chat",), times=1)
    cfg = (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: 'qwen2.5-coder:14b',\n"
        "           breaker: {failures: 1, cooldown: 600}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
        # A rule's local decision (an explicit /local never falls back to the cloud: issue 39, point 1).
        "routing:\n  rules:\n    - {name: local_word, priority: 95, trigger: {type: regex, pattern: lokal},"
        " action: {target: local, backend: ollama}}\n"
    )
    with GliderServer(cfg, tmp_path, record=False) as g:
        tab.page.set_viewport_size({"width": 1400, "height": 900})
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "lokal"}],
        }
        r = httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)
        assert "fallback-from=ollama" in r.headers["x-glider-route"]  # an open breaker: its longest text
        tab.page.goto(g.url + "/ui/")
        row = tab.page.locator("#backends tr", has_text="ollama")
        row.locator(".badge.bad", has_text="open").wait_for()
        box = tab.page.evaluate(
            """() => {
              const scroll = document.querySelector("#backends .scroll");
              const head = [...scroll.querySelectorAll("th")].find((th) => th.textContent === "Breaker");
              const nth = "tbody tr td:nth-child(" + (head.cellIndex + 1) + ")";
              const cell = head.closest("table").querySelector(nth);
              const s = scroll.getBoundingClientRect();
              return {
                scrollWidth: scroll.scrollWidth, clientWidth: scroll.clientWidth,
                viewRight: s.left + scroll.clientWidth,
                headRight: head.getBoundingClientRect().right, cellRight: cell.getBoundingClientRect().right,
                pageWidth: document.documentElement.clientWidth,
              };
            }"""
        )
        tab.shot("overview-backends-1400")
        assert box["scrollWidth"] <= box["clientWidth"], box  # nothing hidden behind a sideways scroll
        assert box["headRight"] <= box["viewRight"] and box["cellRight"] <= box["viewRight"], box
        assert box["viewRight"] <= box["pageWidth"], box
    assert tab.errors == []
