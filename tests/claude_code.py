"""Finding (or installing once) the real Claude Code CLI, and the environment every test runs it with.

`claude` is looked up on PATH, then in <repo>/.ci/node (where .ci/run installs it). When it is in
neither, one `npm install --prefix <repo>/.ci/node @anthropic-ai/claude-code` is tried; the tests skip
with the reason only when npm is missing or cannot install it.
"""

from __future__ import annotations

import os
from pathlib import Path

import npm_cli

NODE_PREFIX = npm_cli.NODE_PREFIX
PACKAGE = "@anthropic-ai/claude-code"
# The model every test's Claude Code asks for: its default changes with the version npm installs, and the
# strict fake upstream serves only the models a test names (tests/fake_wire_checks.py).
MODEL = "claude-sonnet-4-5"


def find() -> str | None:
    return npm_cli.find("claude")


def find_or_install() -> tuple[str | None, str]:
    """The path of `claude`, or None and why it could not be had."""
    return npm_cli.find_or_install("claude", PACKAGE, "Claude Code")


def env(base_url: str, home: Path) -> dict[str, str]:
    """Claude Code pointed at `base_url` with a throw-away HOME, telemetry and updater off, asking for
    `MODEL`."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-test",
        "ANTHROPIC_MODEL": MODEL,
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
