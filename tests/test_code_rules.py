"""Rules of the code that no linter checks: modules call each other's public API only (no `_`-prefixed
method of another module's class), and event kinds are named by their constants
(`store.eventlog.events`), never spelled as strings."""

from __future__ import annotations

import ast
from pathlib import Path

import glider_cli
from glider_cli.store.eventlog import events

SRC = Path(glider_cli.__file__).parent
# `_replace` is a named tuple's public API (urllib's SplitResult); `_values` is values.Frozen's own.
PUBLIC_UNDERSCORED = {"_replace", "_values"}
KINDS = {v for k, v in vars(events).items() if k.isupper() and isinstance(v, str) and v[:1].isupper()} - {
    "RUNTIME"
}


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(SRC.rglob("*.py"))]


def test_no_private_method_of_another_object_is_called() -> None:
    found = []
    for path, tree in _modules():
        # A module's own classes may call each other's private methods (`other._key()` in `__eq__`).
        own = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            name, owner = node.func.attr, node.func.value
            if not name.startswith("_") or name.startswith("__") or name in PUBLIC_UNDERSCORED | own:
                continue
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            found.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node.func)}")
    assert found == []


def test_event_kinds_are_named_by_their_constants() -> None:
    assert {"RouteDecided", "StickyBound", "ToolCallsIssued", "ConfigReloaded"} <= KINDS
    found = []
    for path, tree in _modules():
        if path == Path(events.__file__):
            continue
        docstrings = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body
            and isinstance(n.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in KINDS and id(node) not in docstrings:
                found.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.value!r}")
    assert found == []
