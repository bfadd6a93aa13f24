"""server/ uses Starlette and uvicorn through their documented APIs only, so a new release of either
cannot break Glider through a private module, a private name or a subclassed internal class."""

from __future__ import annotations

import ast
from pathlib import Path

import glider_cli.server

SERVER = Path(glider_cli.server.__file__).parent
# Starlette's documented modules (starlette.io: applications, requests, responses, websockets,
# routing, middleware, testclient; `starlette.types` is what its pure-ASGI middleware docs import).
STARLETTE_PUBLIC = {
    "starlette.applications",
    "starlette.requests",
    "starlette.responses",
    "starlette.routing",
    "starlette.types",
    "starlette.websockets",
    "starlette.middleware",
    "starlette.datastructures",
    "starlette.status",
    "starlette.exceptions",
}
UVICORN_PUBLIC = {"Config", "Server", "run"}  # uvicorn's top-level API (uvicorn.org: Settings, Deployment)


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(SERVER.glob("*.py"))]


def test_only_public_modules_and_names_are_imported() -> None:
    seen: set[str] = set()
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                root = node.module.split(".")[0]
                if root == "starlette":
                    seen.add(node.module)
                    assert node.module in STARLETTE_PUBLIC, f"{path.name}: from {node.module} import ..."
                    assert not any(a.name.startswith("_") for a in node.names), path.name
                assert root != "uvicorn", f"{path.name}: from {node.module} import ... (use `import uvicorn`)"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    lib = alias.name.split(".")[0]
                    if lib in ("starlette", "uvicorn"):
                        assert alias.name == "uvicorn", f"{path.name}: import {alias.name}"
    assert {"starlette.applications", "starlette.types"} <= seen  # the scan did read the server modules


def test_uvicorn_is_used_through_its_top_level_api() -> None:
    used: set[str] = set()
    for _, tree in _modules():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "uvicorn"
            ):
                used.add(node.attr)
    assert used and used <= UVICORN_PUBLIC, used


def test_no_class_of_starlette_or_uvicorn_is_subclassed() -> None:
    """A subclass reaches into its base's internals (the old `_App(Starlette)` overrode
    `build_middleware_stack`; `http_protocol` subclassed uvicorn's `HttpToolsProtocol`)."""
    for path, tree in _modules():
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
                "starlette",
                "uvicorn",
            ):
                imported.update(a.asname or a.name for a in node.names)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    name = base.id if isinstance(base, ast.Name) else ast.unparse(base)
                    assert name not in imported and not name.startswith(("starlette.", "uvicorn.")), (
                        f"{path.name}: class {node.name}({name})"
                    )
