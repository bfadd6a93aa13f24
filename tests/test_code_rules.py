"""Rules of the code that no linter checks: modules call each other's public API only (no `_`-prefixed
method of another module's class), event kinds are named by their constants (`store.eventlog.events`),
never spelled as strings, and no module imports itself back through others (no import cycle, counting
imports inside functions)."""

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


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under `if TYPE_CHECKING:`: imports there never run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            skipped.update(id(n) for body in node.body for n in ast.walk(body))
    return skipped


def _enclosing_functions(tree: ast.Module) -> dict[int, str]:
    """The id of each node inside a function or method -> the name of the innermost one."""
    inside: dict[int, str] = {}
    for node in ast.walk(tree):  # breadth first: an inner function overwrites its outer one
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside.update((id(n), node.name) for body in node.body for n in ast.walk(body))
    return inside


def _imports() -> dict[str, list[tuple[str, str]]]:
    """Each `glider_cli` module -> the `glider_cli` modules it imports, each with where and how:
    `(imported, "path:line: statement")`. Imports inside functions count (they run on the first call
    and close a cycle as surely as a module-level one); only those under `if TYPE_CHECKING:` do not.
    `from glider_cli.pkg import name` imports the module `glider_cli.pkg.name` when there is one, else
    `glider_cli.pkg` (a package's `__init__` is the package's module)."""
    parsed = _modules()
    known = {_module_name(path) for path, _ in parsed}
    edges: dict[str, list[tuple[str, str]]] = {}
    for path, tree in parsed:
        me = _module_name(path)
        package = me if path.name == "__init__.py" else me.rpartition(".")[0]
        skipped, inside = _type_checking_only(tree), _enclosing_functions(tree)
        found = edges.setdefault(me, [])
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            else:
                continue
            where = f"{path.relative_to(SRC.parent)}:{node.lineno}: {ast.unparse(node)}"
            if id(node) in inside:
                where += f"  (inside {inside[id(node)]}())"
            for target in dict.fromkeys(t for t in targets if t in known and t != me):
                found.append((target, where))
    return edges


def _cycles(edges: dict[str, list[tuple[str, str]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target, _ in edges.get(module, []):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                popped = stack.pop()
                on_stack.discard(popped)
                component.append(popped)
                if popped == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(found)


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


def test_no_import_cycle_even_through_imports_inside_functions() -> None:
    edges = _imports()
    assert any("(inside " in where for found in edges.values() for _, where in found)  # lazy ones count
    report = []
    for component in _cycles(edges):
        members = set(component)
        lines = [where for m in component for target, where in edges[m] if target in members]
        report.append(
            f"cycle of {len(component)} modules: {', '.join(component)}\n    " + "\n    ".join(lines)
        )
    assert not report, (
        "These modules import each other (directly or through others), an import inside a function "
        "counting as much as one at the top. Break each cycle at its cause: move the shared concept to "
        "the module that owns it (usually the lower one), or pass a function or value in from the "
        "caller; an interface never imports its implementation. Do not hide the import (in a function, "
        "under TYPE_CHECKING) to silence this: an import stays inside a function only for cold-start "
        "laziness, and then must not close a cycle. The import lines forming each cycle:\n\n"
        + "\n\n".join(report)
    )


# ------------------------------------------------------------------------------ the engine's front door
# `glider_cli.proxy` is the engine's one front door (issue 41): outside `proxy/` (and the tests of its
# internals, tests/proxy) code imports that package, never one of its modules.
ROOT = SRC.parent.parent
PROXY = SRC / "proxy"
PROXY_MODULES = {p.stem for p in PROXY.glob("*.py")} | {p.name for p in PROXY.iterdir() if p.is_dir()}


def _front_door_files() -> list[Path]:
    """Every module that must use the front door: src outside proxy/, tests outside tests/proxy, bench."""
    found = [p for p in SRC.rglob("*.py") if PROXY not in p.parents]
    tests = ROOT / "tests"
    found += [
        p for p in tests.rglob("*.py") if "node_modules" not in p.parts and (tests / "proxy") not in p.parents
    ]
    found += list((ROOT / "bench").rglob("*.py"))
    return sorted(found)


def _proxy_submodule_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """Every import of a `glider_cli.proxy` submodule in `tree`: at module level, inside functions
    (lazy) and under TYPE_CHECKING alike (ast.walk sees them all)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "glider_cli.proxy":  # `from glider_cli.proxy import local_path`
                names += [f"glider_cli.proxy.{a.name}" for a in node.names if a.name in PROXY_MODULES]
        else:
            continue
        found += [(node.lineno, n) for n in names if n.startswith("glider_cli.proxy.")]
    return found


def test_nothing_outside_the_engine_imports_a_proxy_submodule() -> None:
    assert {"engine", "dispatch", "ledger", "strategies"} <= PROXY_MODULES
    found = []
    for path in _front_door_files():
        for line, name in _proxy_submodule_imports(ast.parse(path.read_text(), str(path))):
            found.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert found == []


# A turn's events (an `Opened`'s or a `GateRefused`'s `.events`, what `Turns.close`, `bind_cloud`,
# `escalated` and the regret's `take` return) are written by one function only: the engine's ledger.
LEDGER_RECORD = ("proxy/ledger.py", "Ledger.record")
TURN_EVENT_CALLS = {"close", "bind_cloud", "escalated", "take"}


def _turn_events(it: ast.expr) -> bool:
    if isinstance(it, ast.Attribute) and it.attr == "events":
        return True
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in TURN_EVENT_CALLS:
        owner = it.func.value
        name = (
            owner.attr
            if isinstance(owner, ast.Attribute)
            else owner.id
            if isinstance(owner, ast.Name)
            else ""
        )
        return name in ("turns", "regret")
    return False


def _emits(loop: ast.For | ast.AsyncFor) -> bool:
    """`for kind, data, tid in ...: sink.emit(kind, data, turn_id=tid)`: an event written per item."""
    target = loop.target
    if not (isinstance(target, ast.Tuple) and len(target.elts) == 3):
        return False
    return any(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "emit"
        for c in ast.walk(loop)
    )


def _functions(tree: ast.Module) -> dict[int, str]:
    """id(node) -> the qualified name of the function it is in (`Class.method`), for every node."""
    where: dict[int, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = name
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                inner = f"{name}.{child.name}" if name else child.name
            where[id(child)] = inner
            visit(child, inner)

    visit(tree, "")
    return where


def test_a_turns_events_are_looped_over_in_the_ledger_only() -> None:
    # A sink's own drain (`server.sink.LoopSink`) hands on what was emitted to it: not a turn's events.
    allowed = {LEDGER_RECORD, ("server/sink.py", "LoopSink._drain")}
    found = []
    for path, tree in _modules():
        rel = path.relative_to(SRC).as_posix()
        where = _functions(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.For | ast.AsyncFor):
                hit = _turn_events(node.iter) or _emits(node)
            elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                hit = any(_turn_events(g.iter) for g in node.generators)
            else:
                continue
            if hit and (rel, where.get(id(node), "")) not in allowed:
                found.append(f"{rel}:{node.lineno}: {where.get(id(node), '<module>')}")
    assert found == []
    # The one place is there, and it is the loop the rule means.
    ledger = next(tree for path, tree in _modules() if path == SRC / LEDGER_RECORD[0])
    where = _functions(ledger)
    loops = [n for n in ast.walk(ledger) if isinstance(n, ast.For) and _emits(n)]
    assert [where[id(n)] for n in loops] == [LEDGER_RECORD[1]]


# Library objects that are configured by setting their attributes: the library's own API, not state of
# ours changed behind its owner's back. Everything under protocol/cursor/ is exempt as a whole: the
# protobuf API sets a message's fields by assignment.
LIBRARY_ATTRIBUTES = {
    ("app/rules_edit.py", "y.preserve_quotes"),  # ruamel.yaml's YAML() settings
    ("app/rules_edit.py", "y.width"),
    ("cli.py", "ctx.obj"),  # click's context object
    ("config/regex.py", "options.log_errors"),  # re2.Options
    ("router/triggers.py", "options.log_errors"),
    ("cursor/ca.py", "ctx.minimum_version"),  # an ssl.SSLContext
    ("cursor/h2link.py", "self.conn.local_settings"),  # h2's H2Connection settings
    ("server/app.py", "app.state"),  # Starlette's app state: its constructor takes none
}
PROTOBUF_MODULES = "protocol/cursor/"


def _self_aliases(tree: ast.Module) -> set[tuple[int, str]]:
    """(line of the function, name) of each `name: Any = self` in a function: a value's `__init__`
    sets its fields through `self` seen as Any by the type checker (`values`), so that name is `self`."""
    aliases: set[tuple[int, str]] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.AnnAssign)
                    and isinstance(node.target, ast.Name)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                ):
                    aliases.add((fn.lineno, node.target.id))
    return aliases


def _assigned_attributes(tree: ast.Module) -> list[tuple[ast.Attribute, str]]:
    """Every `x.attr` an assignment (`=`, `+=`..., annotated; tuple and list targets unpacked) sets
    where `x` is not `self` or `cls` (or a name the function bound to `self`: `_self_aliases`): an
    attribute of another object (`self.a.b` is one of `self.a`), each with its operator (`=`, `+=`, ...)."""
    found: list[tuple[ast.Attribute, str]] = []
    aliases = _self_aliases(tree)
    # The function each line is in (the innermost), for the aliases: `s.x = ...` is `self.x` only
    # in the function that bound `s` to `self`.
    where: dict[int, int] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for line in range(fn.lineno, (fn.end_lineno or fn.lineno) + 1):
                if where.get(line, -1) < fn.lineno:
                    where[line] = fn.lineno

    def target(t: ast.expr, op: str) -> None:
        if isinstance(t, ast.Tuple | ast.List):
            for elt in t.elts:
                target(elt, op)
        elif isinstance(t, ast.Starred):
            target(t.value, op)
        elif isinstance(t, ast.Attribute) and not (
            isinstance(t.value, ast.Name)
            and (t.value.id in ("self", "cls") or (where.get(t.lineno, -1), t.value.id) in aliases)
        ):
            found.append((t, op))

    ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.BitOr: "|", ast.BitAnd: "&"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                target(t, "=")
        elif isinstance(node, ast.AugAssign):
            target(node.target, ops.get(type(node.op), "?") + "=")
        elif isinstance(node, ast.AnnAssign):
            target(node.target, "=")
    return found


def test_no_attribute_of_another_object_is_assigned() -> None:
    # An object's state changes through its own methods, or is given at construction (a frozen
    # value: `values.replace`). A site listed here belongs to the object whose attribute it sets.
    found: list[tuple[str, int, str, str]] = []
    allowed_seen: set[tuple[str, str]] = set()
    for path, tree in _modules():
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(PROTOBUF_MODULES):
            continue
        for node, op in _assigned_attributes(tree):
            expr = ast.unparse(node)
            if (rel, expr) in LIBRARY_ATTRIBUTES:
                allowed_seen.add((rel, expr))
            else:
                found.append((rel, node.lineno, expr, op))
    sites = [f"{rel}:{line}: {expr} {op} ..." for rel, line, expr, op in sorted(found)]
    assert not sites, f"{len(sites)} attributes of another object assigned:\n" + "\n".join(sites)
    # The allowlist holds only library idioms the code still has.
    assert allowed_seen == LIBRARY_ATTRIBUTES, sorted(LIBRARY_ATTRIBUTES - allowed_seen)


def test_a_self_alias_counts_only_in_the_function_that_binds_it() -> None:
    tree = ast.parse(
        "class V:\n"
        "    def __init__(self, x):\n"
        "        s: Any = self\n"
        "        s.x = x\n"
        "def other(s):\n"
        "    s.x = 1\n"
        "    t = self\n"
        "    t.y = 2\n"
    )
    assert [ast.unparse(node) for node, _ in _assigned_attributes(tree)] == ["s.x", "t.y"]
