"""The Backends panel shows each backend's circuit breaker (`backends.breaker`) and follows it live:
a real Chromium on the overview while a local backend's 5xx opens its breaker."""

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
    pytest.mark.fake_serves(models=["claude-sonnet-4-5"], ollama_models=["qwen-local"]),
]

HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def test_the_backends_panel_shows_a_breaker_opening(tmp_path: Path, fake: FakeUpstream, tab: Tab) -> None:
    fake.reset()
    fake.set_fault(status=503, message="overloaded", paths=("/api/chat",), times=1)
    cfg = (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local,\n"
        "           breaker: {failures: 1, cooldown: 600}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}', breaker: false}}\n"
    )
    with GliderServer(cfg, tmp_path, record=False) as g:
        tab.page.goto(g.url + "/ui/")
        tab.page.wait_for_selector("#live-state.on")
        row = tab.page.locator("#backends tr", has_text="ollama")
        row.locator(".badge.ok", has_text="closed").wait_for()
        origin = tab.page.locator("#backends tr", has_text="origin")
        assert origin.locator(".badge.off", has_text="off").count() == 1
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "hi"}],
        }
        r = httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)
        assert "fallback-from=ollama" in r.headers["x-glider-route"]
        # Without a reload: the BackendOpened event makes the panel read /healthz again.
        row.locator(".badge.bad", has_text="open").wait_for(timeout=5000)
        text = row.inner_text()
        assert "retry in" in text and "answered 503" in text
        tab.shot("overview-breaker-open")
    assert tab.errors == []
