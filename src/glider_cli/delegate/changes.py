"""What a delegate changed in its workspace, as a diff: taken from the workspace itself, before and after
the run, never from what the vendor says it did.

    snap = take(workspace, scratch)      # before the run (scratch: a private folder, removed after)
    changes = snap.changes()             # after it: Changes (files, lines added/removed, the hunks)
    changes.render(cap)                  # "Changed in the workspace: 2 files, +3 −1" + file lines + hunks

Contract:
- A git workspace (`git` answers for it) is snapshotted as a tree of its working files — tracked and
  untracked, `.gitignore` respected — written with a private index (a copy of the repository's, so
  only changed files are read) and a private object folder under `scratch` that borrows the
  repository's objects as an alternate: nothing is written into the repository. The changes are
  `git diff` between the two trees (no renames, no external diff or textconv).
- Any other folder is walked (`WALK_SKIP` folders left out, at most about `WALK_ENTRIES` files):
  every file's size and mtime, and the bytes of up to `WALK_FILES` files of at most
  `WALK_FILE_BYTES` each (`WALK_BYTES` in all). A file
  whose bytes were kept is compared by content and diffed with difflib; a larger one is changed when
  its size or mtime changed, its lines unknown (None). `complete` is false when a limit was hit.
- Binary files (a NUL byte, or not UTF-8) count no lines (None) and have no hunks.
- `render(cap)` and `to_dict(cap)` cap the hunks at `cap` characters, middle-out
  (`ranking.truncate_middle`, as the continuity block): the first and the last hunks stay.
- Never raises for what it cannot read: a snapshot that fails gives `Changes` with source `none`.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glider_cli.delegate.ranking import truncate_middle
from glider_cli.values import Frozen, init_fields

__all__ = ["Changes", "FileChange", "Snapshot", "take"]

WALK_SKIP = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".mypy_cache"})
WALK_FILES = 20_000
WALK_FILE_BYTES = 512 * 1024
WALK_BYTES = 64 * 1024 * 1024
WALK_ENTRIES = 200_000  # a walk stops here (a home folder is no workspace)
GIT_TIMEOUT = 60.0


class FileChange(Frozen):
    """One changed path: `status` added | modified | deleted; lines None when unknown or binary."""

    path: str
    status: str
    added: int | None
    removed: int | None

    def __init__(self, path: str, status: str, added: int | None, removed: int | None) -> None:
        init_fields(self, path, status, added, removed)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "added": self.added, "removed": self.removed}


class Changes(Frozen):
    source: str  # git | walk | none
    files: tuple[FileChange, ...]
    diff: str
    complete: bool

    def __init__(self, source: str, files: tuple[FileChange, ...], diff: str, complete: bool = True) -> None:
        init_fields(self, source, files, diff, complete)

    @property
    def added(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed or 0 for f in self.files)

    def summary(self) -> str:
        """`2 files, +3 −1` (or `no changes`)."""
        if not self.files:
            return "no changes"
        n = len(self.files)
        return f"{n} file{'s' if n != 1 else ''}, +{self.added} −{self.removed}"

    def render(self, cap: int) -> str:
        """Markdown: the summary, one line per file, the hunks capped at `cap` characters."""
        if self.source == "none":
            return ""
        head = f"Changed in the workspace ({self.source}): {self.summary()}"
        if not self.complete:
            head += " (the walk stopped at its limits: more may have changed)"
        if not self.files:
            return head
        mark = {"added": "A", "modified": "M", "deleted": "D"}
        lines = [head]
        for f in self.files:
            counts = "binary or unknown" if f.added is None else f"+{f.added} −{f.removed}"
            lines.append(f"  {mark.get(f.status, '?')} {f.path}  {counts}")
        out = "\n".join(lines)
        if self.diff and cap > 0:
            hunks, _ = truncate_middle(self.diff, cap)
            out += "\n\n```diff\n" + hunks.rstrip("\n") + "\n```"
        return out

    def to_dict(self, cap: int) -> dict[str, Any]:
        return {
            "source": self.source,
            "files": [f.to_dict() for f in self.files],
            "added": self.added,
            "removed": self.removed,
            "complete": self.complete,
            "diff": truncate_middle(self.diff, cap)[0] if cap > 0 else "",
        }


NONE = Changes("none", (), "")


# ---------------------------------------------------------------------------------------------- git


def _git(ws: Path, args: list[str], env: Mapping[str, str] | None = None) -> str | None:
    try:
        cp = subprocess.run(
            ["git", "-C", str(ws), *args],
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
            env=None if env is None else {**os.environ, **env},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return cp.stdout.decode("utf-8", "surrogateescape") if cp.returncode == 0 else None


class _GitTrees:
    def __init__(self, ws: Path, scratch: Path, objects: str, index: str) -> None:
        self.ws = ws
        (scratch / "objects").mkdir(parents=True, exist_ok=True)
        self.env = {
            "GIT_INDEX_FILE": str(scratch / "index"),
            "GIT_OBJECT_DIRECTORY": str(scratch / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects,
            "GIT_OPTIONAL_LOCKS": "0",
        }
        if os.path.isfile(index):
            shutil.copyfile(index, scratch / "index")  # its stat cache: only changed files are read

    def tree(self) -> str | None:
        if _git(self.ws, ["add", "-A", "--", "."], self.env) is None:
            return None
        out = _git(self.ws, ["write-tree"], self.env)
        return out.strip() if out else None

    def changes(self, before: str, after: str) -> Changes:
        base = [
            "-c",
            "core.quotepath=off",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
        ]
        numstat = _git(self.ws, [*base, "--numstat", "-z", before, after], self.env)
        names = _git(self.ws, [*base, "--name-status", "-z", before, after], self.env)
        hunks = _git(self.ws, [*base, before, after], self.env)
        if numstat is None or names is None:
            return NONE
        status = {"A": "added", "D": "deleted"}
        parts = names.split("\0")
        kinds = {parts[i + 1]: status.get(parts[i][:1], "modified") for i in range(0, len(parts) - 1, 2)}
        files = []
        for item in numstat.split("\0"):
            cols = item.split("\t", 2)
            if len(cols) != 3:
                continue
            add, rem, path = cols
            binary = add == "-"
            a, r = (None, None) if binary else (int(add), int(rem))
            files.append(FileChange(path, kinds.get(path, "modified"), a, r))
        return Changes("git", tuple(files), hunks or "")


# ---------------------------------------------------------------------------------------------- walk

_Seen = dict[str, tuple[int, int, bytes | None]]  # path -> (size, mtime_ns, bytes when kept)


def _walk(ws: Path) -> tuple[_Seen, bool]:
    seen: _Seen = {}
    kept = 0
    complete = True
    for root, dirs, names in os.walk(ws):
        dirs[:] = sorted(d for d in dirs if d not in WALK_SKIP)
        if len(seen) >= WALK_ENTRIES:
            return seen, False
        for name in sorted(names):
            full = os.path.join(root, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            rel = os.path.relpath(full, ws)
            data: bytes | None = None
            if os.path.islink(full):
                data = ("link:" + os.readlink(full)).encode()
            elif len(seen) < WALK_FILES and st.st_size <= WALK_FILE_BYTES and kept + st.st_size <= WALK_BYTES:
                try:
                    with open(full, "rb") as fh:
                        data = fh.read(WALK_FILE_BYTES + 1)
                except OSError:
                    data = None
                kept += len(data or b"")
            else:
                complete = False
            seen[rel] = (st.st_size, st.st_mtime_ns, data)
    return seen, complete


def _text(data: bytes | None) -> list[str] | None:
    if data is None or b"\0" in data:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _diff_walk(before: _Seen, after: _Seen) -> tuple[list[FileChange], str]:
    files: list[FileChange] = []
    hunks: list[str] = []
    for path in sorted({*before, *after}):
        b, a = before.get(path), after.get(path)
        if b is not None and a is not None:
            if b[2] is not None and a[2] is not None:
                if b[2] == a[2]:
                    continue
            elif b[:2] == a[:2]:
                continue
        status = "added" if b is None else "deleted" if a is None else "modified"
        old = _text(b[2]) if b is not None else []
        new = _text(a[2]) if a is not None else []
        if old is None or new is None:
            files.append(FileChange(path, status, None, None))
            continue
        lines = list(
            difflib.unified_diff(
                old,
                new,
                "/dev/null" if b is None else f"a/{path}",
                "/dev/null" if a is None else f"b/{path}",
            )
        )
        added = sum(1 for x in lines[2:] if x.startswith("+"))
        removed = sum(1 for x in lines[2:] if x.startswith("-"))
        files.append(FileChange(path, status, added, removed))
        hunks.append(
            f"diff a/{path} b/{path}\n" + "".join(x if x.endswith("\n") else x + "\n" for x in lines)
        )
    return files, "".join(hunks)


# ---------------------------------------------------------------------------------------------- take


class Snapshot:
    """The workspace as it was before the run; `changes()` compares it with the workspace now."""

    def __init__(
        self, ws: Path, git: _GitTrees | None, tree: str | None, walked: _Seen | None, complete: bool
    ):
        self._ws = ws
        self._git = git
        self._tree = tree
        self._walked = walked
        self._complete = complete

    def changes(self) -> Changes:
        try:
            if self._git is not None and self._tree is not None:
                after = self._git.tree()
                return self._git.changes(self._tree, after) if after else NONE
            if self._walked is not None:
                now, complete = _walk(self._ws)
                files, diff = _diff_walk(self._walked, now)
                return Changes("walk", tuple(files), diff, complete and self._complete)
        except OSError:
            pass
        return NONE


def take(workspace: Path, scratch: Path) -> Snapshot:
    """Snapshot `workspace` before a run: git trees when git answers for it, else a file walk."""
    ws = Path(workspace)
    top = _git(ws, ["rev-parse", "--show-toplevel"])
    if top is not None:
        paths = _git(
            ws, ["rev-parse", "--path-format=absolute", "--git-path", "objects", "--git-path", "index"]
        )
        if paths is not None and len(paths.splitlines()) == 2:
            objects, index = paths.splitlines()
            try:
                trees = _GitTrees(ws, scratch, objects, index)
            except OSError:
                return Snapshot(ws, None, None, None, False)
            tree = trees.tree()
            if tree is not None:
                return Snapshot(ws, trees, tree, None, True)
    try:
        walked, complete = _walk(ws)
    except OSError:
        return Snapshot(ws, None, None, None, False)
    return Snapshot(ws, None, None, walked, complete)
