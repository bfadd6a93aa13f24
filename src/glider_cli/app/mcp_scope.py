"""Which workspace an MCP tool call is about, and what of the store belongs to it.

Contract:
- `workspace_for(given, named, default)`: the workspace a call is scoped to, normalised as the
  continuity record normalises it (`delegate.workspace.normalise`: absolute, resolved, the nearest
  ancestor holding `.git`). First match wins: the tool's `workspace` argument (`given`; it must be an
  absolute path to a directory), the root the client names (`named`: the `x-glider-workspace` header
  of an HTTP call), the server's own working directory (`default`: `glider mcp` on stdio). None of
  the three: `ScopeError` (over HTTP, the glider serve process's directory says nothing of the agent's).
- `Owners(lookup)` / `Owners.of_folds(folds)`: each turn's workspace, from the `clone_path` key the
  client named (normalised once per distinct value, and that kept for the process). A turn that named
  no workspace belongs to none: no scoped view shows it.
- `inside(path, ws)`: `path` is `ws` or under it (string prefix on `/` boundaries, no I/O).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

from glider_cli.delegate.workspace import normalise
from glider_cli.errors import GliderError
from glider_cli.store.index.turnfold import TurnFold


class ScopeError(GliderError):
    """A call names no usable workspace (the message says what to pass)."""


def workspace_for(given: object, named: str | None, default: Path | None) -> Path:
    if given is not None:
        if not isinstance(given, str) or not given.strip():
            raise ScopeError("workspace must be an absolute path (a string)")
        p = Path(given).expanduser()
        if not p.is_absolute():
            raise ScopeError(f"workspace {given!r} is not an absolute path")
        if not p.is_dir():
            raise ScopeError(f"workspace {given!r} is not a directory")
        return normalise(p)
    if named:
        return normalise(named)
    if default is not None:
        return normalise(default)
    raise ScopeError(
        "no workspace: pass `workspace` (the absolute path of the project), or send the "
        "x-glider-workspace header with the MCP requests"
    )


def inside(path: str | None, ws: Path) -> bool:
    if not path:
        return False
    root = str(ws)
    return path == root or path.startswith(root.rstrip("/") + "/")


@lru_cache(maxsize=1024)
def _root_of(raw: str) -> str | None:
    return str(normalise(raw)) if Path(raw).is_absolute() else None


class Owners:
    """turn id -> its workspace (normalised `clone_path`), or None when the turn named none.
    `lookup(turn)` gives a turn's `clone_path` as the client wrote it (None: unknown or unnamed)."""

    def __init__(self, lookup: Callable[[str], str | None]) -> None:
        self._lookup = lookup
        self._memo: dict[str, str | None] = {}

    @classmethod
    def of_folds(cls, folds: Iterable[TurnFold]) -> Owners:
        return cls({f.turn: f.key("clone_path") for f in folds}.get)

    def of(self, turn: str) -> str | None:
        if turn not in self._memo:
            raw = self._lookup(turn)
            self._memo[turn] = _root_of(raw) if raw else None
        return self._memo[turn]

    def belongs(self, turn: str | None, ws: Path) -> bool:
        return turn is not None and inside(self.of(turn), ws)
