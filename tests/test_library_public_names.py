"""Glider uses its libraries (and the standard library) through their public API only: no private
module, no underscore name of another package, no `getattr` reaching for one. A private name can go
in any release; `server/`'s finer check of Starlette and uvicorn is tests/server/test_public_apis.py."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import glider_cli

SRC = Path(glider_cli.__file__).parent
# Names Python itself documents with a leading underscore.
DOCUMENTED = {"sys._getframe", "os._exit"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _foreign(module: str) -> bool:
    return module.split(".")[0] != "glider_cli"


def _offences(path: Path, root: Path = SRC.parent) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(root)
    modules: dict[str, str] = {}  # local name -> the foreign module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _foreign(alias.name):
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append(f"{where}:{node.lineno}: import {alias.name}")
                    local = alias.asname or alias.name.split(".")[0]
                    modules[local] = (alias.asname and alias.name) or alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and _foreign(node.module):
            if any(_private(part) for part in node.module.split(".")):
                found.append(f"{where}:{node.lineno}: from {node.module} import ...")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{where}:{node.lineno}: from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and _private(node.attr)
            and f"{modules[node.value.id]}.{node.attr}" not in DOCUMENTED
        ):
            found.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
            and not (isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls"))
        ):
            found.append(f"{where}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    return found


def test_no_private_name_of_another_package_is_used() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 100  # the walk did find the package
    found = [o for p in files for o in _offences(p)]
    assert found == [], "\n".join(found)


def test_the_check_sees_each_kind_of_private_use(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import re2\nimport aiohttp._http as h\nfrom uvicorn.protocols import _x\n"
        "a = re2._Anchor\nb = getattr(re2.compile('x'), '_regexp', None)\nc = sys._getframe\n"
    )
    found = _offences(probe, tmp_path)
    assert [o.split(": ", 1)[1] for o in found] == [
        "import aiohttp._http",
        "from uvicorn.protocols import _x",
        "re2._Anchor",
        "getattr(..., '_regexp')",
    ], found
    assert sys._getframe is not None  # documented: allowed
