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
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NODE_PREFIX = REPO / ".ci" / "node"
PACKAGE = "@google/gemini-cli"
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def find() -> str | None:
    found = shutil.which("gemini")
    if found:
        return found
    local = NODE_PREFIX / "node_modules" / ".bin" / "gemini"
    return str(local) if os.access(local, os.X_OK) else None


def find_or_install() -> tuple[str | None, str]:
    """The path of `gemini`, or None and why it could not be had."""
    found = find()
    if found:
        return found, ""
    npm = shutil.which("npm")
    if npm is None:
        return None, f"Gemini CLI is not installed and npm is not available to install {PACKAGE}"
    proc = subprocess.run(
        [npm, "install", "--prefix", str(NODE_PREFIX), "--no-audit", "--no-fund", PACKAGE],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    found = find()
    if found is None:
        return None, f"npm could not install {PACKAGE}: {proc.stderr.strip()[-500:]}"
    return found, ""


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
