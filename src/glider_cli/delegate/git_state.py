"""The workspace's git state before and after a delegate run: which files the run changed.

`git_snapshot(workspace)` is the porcelain status (each dirty file with a content hash, so a second
edit of an already dirty file shows) and HEAD, or None outside a repository or without git;
`changed_files(workspace, before, after)` the paths whose state differs, plus what the commits the run
made touched. `delegate.runner` records them as the run's `files`; `delegate.changes` makes the diff.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from glider_cli.values import Frozen, init_fields


class GitSnapshot(Frozen):
    head: str | None
    status: Mapping[str, str]  # path -> porcelain XY code (+ content hash for dirty files)

    def __init__(self, head: str | None, status: Mapping[str, str]) -> None:
        init_fields(self, head, status)


def _git(workspace: Path, *args: str) -> str | None:
    try:
        cp = subprocess.run(
            ["git", "-C", str(workspace), *args],
            capture_output=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return cp.stdout.decode("utf-8", "surrogateescape") if cp.returncode == 0 else None


def _digest(path: Path) -> str:
    try:
        if path.is_symlink():
            return "link:" + os.readlink(path)
        if path.is_dir():
            return "dir"
        with open(path, "rb") as fh:
            return hashlib.sha1(fh.read()).hexdigest()
    except OSError:
        return "missing"


def git_snapshot(workspace: Path) -> GitSnapshot | None:
    """The workspace's git state, or None outside a repository (or without git)."""
    raw = _git(workspace, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    if raw is None:
        return None
    head = (_git(workspace, "rev-parse", "--verify", "-q", "HEAD") or "").strip() or None
    status: dict[str, str] = {}
    parts = raw.split("\0")
    i = 0
    while i < len(parts):
        item = parts[i]
        i += 1
        if len(item) < 4:
            continue
        code, path = item[:2], item[3:]
        if code[0] in "RC":
            i += 1  # the rename's source path follows
        status[path] = f"{code}:{_digest(workspace / path)}"
    return GitSnapshot(head=head, status=status)


def changed_files(workspace: Path, before: GitSnapshot | None, after: GitSnapshot | None) -> list[str]:
    if before is None or after is None:
        return []
    paths = sorted(
        {p for p in (*before.status, *after.status) if before.status.get(p) != after.status.get(p)}
    )
    if before.head and after.head and before.head != after.head:
        diff = _git(workspace, "diff", "--name-only", before.head, after.head) or ""
        paths = sorted({*paths, *(p for p in diff.splitlines() if p)})
    return paths
