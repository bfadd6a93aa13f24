"""Helpers shared by the delegate tests (fixtures stay in conftest.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git_status(ws: Path) -> str:
    """`git status --porcelain` of a workspace, untracked files included: what a run must not change."""
    return subprocess.run(
        ["git", "-C", str(ws), "status", "--porcelain=v1", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
