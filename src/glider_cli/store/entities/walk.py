"""Walking a repository the way git sees it: `.gitignore` files (at every level) are honoured.

`walk(root)` yields `WalkEntry` for every directory (root included) and file that git would not
ignore, depth first, in name order. `.git` is always skipped and symlinks are not followed. A
pattern in a `.gitignore` applies to paths below the directory that holds it; a negation (`!x`) in a
deeper `.gitignore` cannot re-include a path a parent file excludes (git's own rule for directories,
applied here to files too).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pathspec

from glider_cli.errors import StoreError
from glider_cli.values import Frozen

if TYPE_CHECKING:
    _Spec = pathspec.PathSpec[Any]
_ALWAYS_SKIP = frozenset({".git", ".hg", ".svn"})


class WalkEntry(Frozen):
    path: str
    rel: str
    is_dir: bool
    size: int
    mtime_ns: int

    def __init__(self, path: str, rel: str, is_dir: bool, size: int, mtime_ns: int) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.path = path
        s.rel = rel
        s.is_dir = is_dir
        s.size = size
        s.mtime_ns = mtime_ns


def _load_spec(directory: str) -> _Spec | None:
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if len(spec) else None


def walk(root: Path) -> Iterator[WalkEntry]:
    """See the module contract. Raises StoreError when `root` is not a directory."""
    base = os.path.abspath(root)
    if not os.path.isdir(base):
        raise StoreError(f"not a directory: {root}")
    st = os.stat(base)
    yield WalkEntry(base, ".", True, 0, st.st_mtime_ns)
    # Each stack item: a directory, its path relative to root, and the ignore specs in force there
    # as (directory rel path, spec).
    specs0: tuple[tuple[str, _Spec], ...] = ()
    s = _load_spec(base)
    if s is not None:
        specs0 = (("", s),)
    stack: list[tuple[str, str, tuple[tuple[str, _Spec], ...]]] = [(base, "", specs0)]
    while stack:
        directory, rel_dir, specs = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[tuple[str, str, tuple[tuple[str, _Spec], ...]]] = []
        for entry in entries:
            if entry.name in _ALWAYS_SKIP:
                continue
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir()
                est = entry.stat()
            except OSError:
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if _ignored(specs, rel, is_dir):
                continue
            if is_dir:
                yield WalkEntry(entry.path, rel, True, 0, est.st_mtime_ns)
                child = _load_spec(entry.path)
                subdirs.append((entry.path, rel, (*specs, (rel, child)) if child is not None else specs))
            else:
                yield WalkEntry(entry.path, rel, False, est.st_size, est.st_mtime_ns)
        stack.extend(reversed(subdirs))


def _ignored(specs: tuple[tuple[str, _Spec], ...], rel: str, is_dir: bool) -> bool:
    for at, spec in specs:
        sub = rel[len(at) + 1 :] if at else rel
        if spec.match_file(sub + "/" if is_dir else sub):
            return True
    return False
