"""Finding (or installing once) the real Gemini CLI, and the throw-away HOME and environment it runs with.

`gemini` is looked up on PATH, then in <repo>/.ci/node (where .ci/run installs it). When it is in
neither, one `npm install --prefix <repo>/.ci/node @google/gemini-cli` is tried; the tests skip with
the reason only when npm is missing or cannot install it.

Headless runs need no login: `GEMINI_API_KEY` plus a settings.json that selects API-key auth and turns
off folder trust, telemetry and update checks (shared/CLIENTS.md §3). `GOOGLE_GEMINI_BASE_URL` points
it at Glider (plain http is allowed for 127.0.0.1).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import npm_cli

NODE_PREFIX = npm_cli.NODE_PREFIX
PACKAGE = "@google/gemini-cli"
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def find() -> str | None:
    return npm_cli.find("gemini")


def find_or_install() -> tuple[str | None, str]:
    """The path of `gemini`, or None and why it could not be had."""
    return npm_cli.find_or_install("gemini", PACKAGE, "Gemini CLI")


def home(path: Path) -> Path:
    """A HOME with the settings a headless, offline run needs."""
    (path / ".gemini").mkdir(parents=True, exist_ok=True)
    (path / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    return path


def env(base_url: str, home_dir: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home_dir),
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_API_KEY": "sk-test-gemini",
        "GEMINI_TELEMETRY_ENABLED": "false",
        "NO_COLOR": "1",
    }
