"""The Backends panel while `glider serve`'s first probe of its local backends is in flight (it listens
before the probe has answered, `proxy.local_path`): a real Chromium on the overview says "probing…",
re-reads `/healthz` on its own while it says `probing`, shows what the probe found when it lands
(without a request or a reload), and then stops; with no probe in flight it never polls `/healthz`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from glider_harness import GliderServer
from ui_tab import Tab

from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.slow]

QUIET = 2.0  # seconds the page is watched for /healthz requests once nothing is probing


def _config(url: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{url}', model: fake-model}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n"
    )


def _slow_ollama() -> FakeUpstream:
    """A fake Ollama (and cloud) whose window is known only from the probe's `/api/show`."""
    return FakeUpstream(
        models=["claude-x"], ollama_models=["fake-model"], context_window=1024, ollama_show=True
    )


class Healthz:
    """The page's requests to `/healthz`, and how many times its main frame navigated (a reload).
    Playwright's sync API hands the page's events over only inside its own calls: wait with
    `page.wait_for_timeout`, not `time.sleep`, or the requests made meanwhile are not counted yet."""

    def __init__(self, page: Any) -> None:
        self.asked: list[str] = []
        self.navigations = 0
        page.on("request", self._request)
        page.on("framenavigated", self._navigated)
        self._page = page

    def _request(self, request: Any) -> None:
        if request.url.split("?")[0].endswith("/healthz"):
            self.asked.append(request.url)

    def _navigated(self, frame: Any) -> None:
        if frame == self._page.main_frame:
            self.navigations += 1


def test_the_backends_panel_says_probing_then_shows_what_the_probe_found(tmp_path: Path, tab: Tab) -> None:
    with _slow_ollama() as both:
        # Each of the probe's two requests (/api/tags, then /api/show) answers after 1 s (its read
        # timeout is 1.5 s): about 2 s during which /healthz says `probing`.
        both.set_fault(delay=1.0, paths=("/api/tags", "/api/show"), times=2)
        with GliderServer(_config(both.url), tmp_path, record=False, probed=False) as g:
            seen = Healthz(tab.page)
            tab.page.goto(g.url + "/ui/")
            row = tab.page.locator("#backends tr", has_text="ollama")
            row.get_by_text("probing…").wait_for()
            probing_text = row.inner_text()
            tab.shot("overview-backend-probing")
            # No request, no reload: the page re-reads /healthz on its own and shows what was found.
            row.get_by_text("1,024 tokens").wait_for(timeout=8000)
            found_text = row.inner_text()
            asked_while_probing = len(seen.asked)
            assert g.app.state.proxy.local.probing is False
            tab.page.wait_for_timeout(QUIET * 1000)  # the probe is over: the page stops asking
            after = len(seen.asked) - asked_while_probing
            tab.shot("overview-backend-probed")
        assert both.requests == []  # no model request went anywhere
    assert "unknown" not in probing_text, probing_text
    assert "fake-model:latest" in found_text and "probing" not in found_text, found_text
    assert asked_while_probing >= 3, seen.asked  # the header, the first stats, then at least one poll
    assert after == 0, seen.asked
    assert seen.navigations == 1  # the first load only
    assert tab.errors == []


def test_the_overview_does_not_poll_healthz_when_no_probe_is_in_flight(tmp_path: Path, tab: Tab) -> None:
    with _slow_ollama() as both, GliderServer(_config(both.url), tmp_path, record=False) as g:
        assert g.app.state.proxy.local.probing is False  # entered once the probe was over
        seen = Healthz(tab.page)
        tab.page.goto(g.url + "/ui/")
        row = tab.page.locator("#backends tr", has_text="ollama")
        row.get_by_text("1,024 tokens").wait_for()
        tab.page.wait_for_selector("#live-state.on")
        on_load = len(seen.asked)
        tab.page.wait_for_timeout(QUIET * 1000)
        text = row.inner_text()
    assert "probing" not in text, text
    # /healthz read on load (the header, the first stats) and never again without events.
    assert on_load <= 2 and len(seen.asked) == on_load, seen.asked
    assert tab.errors == []
