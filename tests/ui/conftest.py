"""Fixtures for the dashboard's tests: a real Chromium driven by Playwright, and a live Glider.

The browser is Debian's `chromium` (`/usr/bin/chromium`, or $GLIDER_CHROMIUM), launched by Playwright
from PyPI; Playwright's own browser download is never used (it is not reachable here). Without the
browser the browser tests skip with the reason, except under CI (`CI` set), where they fail: .ci/run
installs it. Screenshots go to $GLIDER_SCREENSHOTS, else a temporary directory, named at the end of
the run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_tab import Tab, remember

# The live-server harness lives with the server tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

CHROMIUM = os.environ.get("GLIDER_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why} (CI must run the browser tests: .ci/run installs chromium and playwright)")
    pytest.skip(why)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        _unavailable(f"{CHROMIUM} not found (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("GLIDER_SCREENSHOTS")
    if chosen:
        Path(chosen).mkdir(parents=True, exist_ok=True)
        return Path(chosen)
    return tmp_path_factory.mktemp("dashboard-screenshots")


def _open(browser: Any, screenshots: Path, scheme: str) -> Iterator[Tab]:
    ctx = browser.new_context(viewport={"width": 1366, "height": 860}, color_scheme=scheme)
    page = ctx.new_page()
    page.set_default_timeout(5000)
    tab = Tab(page, screenshots)
    page.on(
        "console", lambda m: tab.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: tab.errors.append(f"page error: {e}"))
    try:
        yield tab
    finally:
        ctx.close()


@pytest.fixture
def tab(browser: Any, screenshots: Path) -> Iterator[Tab]:
    yield from _open(browser, screenshots, "light")


@pytest.fixture
def dark_tab(browser: Any, screenshots: Path) -> Iterator[Tab]:
    yield from _open(browser, screenshots, "dark")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    shots = remember()
    if shots:
        terminalreporter.write_line(f"dashboard screenshots ({len(shots)}): {shots[0].parent}")
