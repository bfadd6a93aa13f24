"""Glider's own scripts evaluated as Python, without the Starlark interpreter (issue 29).

Contract:
- `compile_native(source, filename)` returns a `NativeScript`, or None when the source is not
  wholly in the subset below (`unfit(source)` says why); the caller then evaluates the script with
  Starlark as before. Only for the scripts that ship in the wheel (`Trigger.bundled`): they are
  Glider's own code, reviewed like the rest of it; a user's script always goes to the worker.
- `NativeScript.call(request)` takes a `native_ops.NativeRequest` (built straight from the
  decision's data, no JSON) and returns a ScriptOutcome, never raises: the result is read by
  `results.interpret`, as the Starlark engine reads it; a raise is an outcome with `error`
  (`raised: ... (line N)`), and so is a call that outlasts the script's deadline (the Starlark path
  would have stopped it: the verdict is the same, the work is not cut short).

The subset is the part of Starlark that Python parses to the same meaning, checked on Python's AST
before anything runs:
- the top level: a docstring, `NAME = literal` (str, int, float, bool, None, and lists, tuples and
  dicts of them, dict keys strings; each name bound once) and `def name(params):` (positional
  parameters only, no defaults, decorators or annotations); `evaluate` takes one parameter;
- in a function: `=` to a plain name, `if`/`elif`/`else`, `for NAME in ...:` (no `else`),
  `return`, `break`, `continue`, `pass`, docstrings; expressions: names (parameters, locals,
  top-level names, `len`), literals, `and`/`or`/`not`, `x if c else y`, one comparison (`==`,
  `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`), `+`, `-`, unary `-`, subscripts and slices,
  attributes the request struct has (`native_ops.NativeRequest` fields, `role`, `content`), the
  methods `native_ops.METHODS` and calls of top-level functions defined above the caller (so no
  recursion);
- string literals plain or triple-quoted with the escapes `\\n \\t \\\\ \\" \\'` only; numbers
  in decimal; no tab, no line continuation;
- nothing else: no import, while, lambda, comprehension, f-string, `is`, keyword or starred
  argument, assignment to a subscript or attribute, augmented assignment, global, try, raise,
  with, dunder or `g_`-prefixed name.
Every operation whose Python meaning differs from Starlark's is rewritten
(`sandbox.native_rewrite`) into a `native_ops` helper that gives Starlark's answer (see there).
Without `while`, recursion, `range` or repetition, a call's work is bounded by the request's size,
as the Starlark interpreter bounds it. The code runs with no Python builtins at all: only the
helpers are in its namespace.

Strings: both sides count code points (`len`, indexes, slices, `find`); lone surrogates cannot
reach a script (request bodies are parsed by orjson, which refuses them), and `lower()` follows
starlark-pyo3's Unicode tables (native_ops.STARLARK_LOWER). What differs and is left as it is:
error texts (a native error says what Python said; both count as no match with the reason in the
trace).
"""

from __future__ import annotations

import ast
import re
import time
from typing import Any

from glider_cli.sandbox import native_ops
from glider_cli.sandbox.native_rewrite import BINOP, CMP, Rewrite, assigned
from glider_cli.sandbox.results import NO_MATCH, ScriptOutcome, error_outcome, interpret

DEFAULT_DEADLINE_S = 0.05  # the Starlark path's (sandbox.supervisor.DEFAULT_DEADLINE_S)

_NONE = ScriptOutcome(False)
_FIELDS = frozenset(native_ops.NativeRequest.__slots__) | {"role", "content"}
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_NUMBER = re.compile(r"\d+(?:\.\d+)?\Z")


class Unfit(Exception):
    """The source is outside the subset (the message says where and what)."""

    def __init__(self, node: ast.AST | None, what: str) -> None:
        line = getattr(node, "lineno", 0)
        super().__init__(f"line {line}: {what}" if line else what)


# Sources `unfit` found in the subset, with their checked trees, each taken (once) by the next
# `compile_native` of the same source: `glider serve` lints its config, then compiles its rules, and
# each bundled script was parsed and checked twice (issue 29's cold start). Only sources the check
# passed are kept, at most _CHECKED_MAX of them (the bundled scripts are far fewer).
_CHECKED: dict[str, ast.Module] = {}
_CHECKED_MAX = 64


def unfit(source: str) -> str | None:
    """Why `source` cannot be evaluated natively (None when it can)."""
    try:
        tree = _check(source)
    except Unfit as exc:
        return str(exc)
    if len(_CHECKED) >= _CHECKED_MAX:
        _CHECKED.clear()
    _CHECKED[source] = tree
    return None


def _check(source: str) -> ast.Module:
    if "\t" in source or "\\\n" in source or "\r" in source:
        raise Unfit(None, "a tab, carriage return or line continuation")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise Unfit(None, f"not Python syntax ({exc.__class__.__name__})") from None
    _Checker(source).module(tree)
    return tree


class _Checker:
    """Checks the subset (see the module contract); raises Unfit."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._lines: list[str] | None = None
        self.globals: set[str] = set()
        self.functions: dict[str, int] = {}  # name -> number of parameters, in source order
        self.names: set[str] = set()
        self.defined: set[str] = set()  # the functions above the one being checked

    def module(self, tree: ast.Module) -> None:
        for i, node in enumerate(tree.body):
            if i == 0 and _docstring(node):
                continue
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                name = self.bind(node.targets[0], node)
                self.literal(node.value)
                self.globals.add(name)
            elif isinstance(node, ast.FunctionDef):
                self.bind(ast.Name(node.name, ast.Store(), lineno=node.lineno), node)
                self.functions[node.name] = len(node.args.args)
            else:
                raise Unfit(node, f"a top-level {type(node).__name__} (only literals and def)")
        if self.functions.get("evaluate") != 1:
            raise Unfit(None, "no evaluate(request) function of one parameter")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.function(node)
                self.defined.add(node.name)

    def bind(self, target: ast.expr, node: ast.AST) -> str:
        if not isinstance(target, ast.Name):
            raise Unfit(node, "an assignment to something other than a name")
        name = self.name(target.id, node)
        if name in self.globals or name in self.functions:
            raise Unfit(node, f"{name} bound twice at the top level")
        return name

    @staticmethod
    def name(name: str, node: ast.AST) -> str:
        if name.startswith("__") or name.startswith("g_") or name in native_ops.BUILTINS:
            raise Unfit(node, f"the name {name}")
        return name

    def literal(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant):
            self.constant(node)
        elif isinstance(node, ast.List | ast.Tuple):
            for e in node.elts:
                self.literal(e)
        elif isinstance(node, ast.Dict):
            self.dict_keys(node)
            for v in node.values:
                self.literal(v)
        else:
            raise Unfit(node, f"a top-level value that is not a literal ({type(node).__name__})")

    def dict_keys(self, node: ast.Dict) -> None:
        seen: set[str] = set()
        for k in node.keys:
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)) or k.value in seen:
                raise Unfit(node, "a dict key that is not a distinct string literal")
            self.constant(k)
            seen.add(k.value)

    def constant(self, node: ast.Constant) -> None:
        value, text = node.value, self.segment(node)
        if isinstance(value, str):
            if not _one_string(text):
                raise Unfit(node, "a string literal with a prefix or in pieces")
            if any(c not in "nt\\\"'" for c in _ESCAPE.findall(text)):
                raise Unfit(node, "a string escape other than \\n \\t \\\\ \\\" \\'")
        elif value is None or isinstance(value, bool):
            pass
        elif not (isinstance(value, int | float) and _NUMBER.match(text)):
            raise Unfit(node, f"the literal {text!r}")

    def segment(self, node: ast.expr) -> str:
        """`ast.get_source_segment(self.source, node) or ""`, with the source split into lines once
        per check instead of once per literal (the source has no carriage return: `_check`)."""
        end_line, end_col = node.end_lineno, node.end_col_offset
        if end_line is None or end_col is None:
            return ""
        if self._lines is None:
            self._lines = self.source.split("\n")
        lines, first = self._lines, node.lineno - 1
        if end_line - 1 == first:
            return lines[first].encode()[node.col_offset : end_col].decode()
        head = lines[first].encode()[node.col_offset :].decode()
        tail = lines[end_line - 1].encode()[:end_col].decode()
        return "\n".join([head, *lines[first + 1 : end_line - 1], tail])

    def function(self, node: ast.FunctionDef) -> None:
        a = node.args
        if node.decorator_list or node.returns or getattr(node, "type_params", None):
            raise Unfit(node, "a decorated or annotated function")
        if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or a.kw_defaults:
            raise Unfit(node, "parameters other than plain positional ones")
        params = [self.name(p.arg, node) for p in a.args if p.annotation is None]
        if len(params) != len(a.args) or len(set(params)) != len(params):
            raise Unfit(node, "annotated or repeated parameters")
        self.names = set(params) | assigned(node)
        for s in node.body:
            self.stmt(s, top=s is node.body[0])

    def stmt(self, node: ast.stmt, top: bool = False) -> None:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise Unfit(node, "an assignment to something other than one name")
            self.name(node.targets[0].id, node)
            self.expr(node.value)
        elif isinstance(node, ast.If):
            self.expr(node.test)
            self.block(node.body + node.orelse)
        elif isinstance(node, ast.For):
            if node.orelse or not isinstance(node.target, ast.Name):
                raise Unfit(node, "for with an else or a target that is not one name")
            self.name(node.target.id, node)
            self.expr(node.iter)
            self.block(node.body)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expr(node.value)
        elif isinstance(node, ast.Break | ast.Continue | ast.Pass):
            pass
        elif isinstance(node, ast.Expr) and (_docstring(node) or isinstance(node.value, ast.Call)):
            if not _docstring(node):
                self.expr(node.value)
        else:
            raise Unfit(node, f"the statement {type(node).__name__}")

    def block(self, body: list[ast.stmt]) -> None:
        for s in body:
            self.stmt(s)

    def expr(self, node: ast.expr) -> None:  # one branch per allowed node type
        if isinstance(node, ast.Constant):
            self.constant(node)
        elif isinstance(node, ast.Name):
            name = self.name(node.id, node)
            if name in self.functions:
                raise Unfit(node, f"the function {name} used as a value")
            if name not in self.names and name not in self.globals:
                raise Unfit(node, f"the name {name} (not a parameter, local or top-level name)")
        elif isinstance(node, ast.List | ast.Tuple):
            for e in node.elts:
                self.expr(e)
        elif isinstance(node, ast.Dict):
            self.dict_keys(node)
            for v in node.values:
                self.expr(v)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self.expr(v)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
            self.expr(node.operand)
        elif isinstance(node, ast.BinOp) and type(node.op) in BINOP:
            self.expr(node.left)
            self.expr(node.right)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in CMP:
            self.expr(node.left)
            self.expr(node.comparators[0])
        elif isinstance(node, ast.IfExp):
            for part in (node.test, node.body, node.orelse):
                self.expr(part)
        elif isinstance(node, ast.Attribute) and node.attr in _FIELDS:
            self.expr(node.value)
        elif isinstance(node, ast.Subscript):
            self.expr(node.value)
            inner = node.slice
            parts = [inner.lower, inner.upper, inner.step] if isinstance(inner, ast.Slice) else [inner]
            for p in parts:
                if p is not None:
                    self.expr(p)
        elif isinstance(node, ast.Call):
            self.call(node)
        else:
            raise Unfit(node, f"the expression {type(node).__name__}")

    def call(self, node: ast.Call) -> None:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise Unfit(node, "a keyword or starred argument")
        f, n = node.func, len(node.args)
        if isinstance(f, ast.Attribute) and f.attr in native_ops.METHODS:
            if n not in native_ops.METHODS[f.attr][1]:
                raise Unfit(node, f"{f.attr}() with {n} arguments")
            self.expr(f.value)
        elif isinstance(f, ast.Name) and f.id in native_ops.BUILTINS and f.id not in self.names:
            if n not in native_ops.BUILTINS[f.id][1]:
                raise Unfit(node, f"{f.id}() with {n} arguments")
        elif isinstance(f, ast.Name) and f.id in self.defined and f.id not in self.names:
            if n != self.functions[f.id]:
                raise Unfit(node, f"{f.id}() with {n} arguments")
        else:
            raise Unfit(node, f"a call of {ast.unparse(f)} (not an allowed method or an earlier function)")
        for a in node.args:
            self.expr(a)


def _docstring(node: ast.stmt) -> bool:
    value = node.value if isinstance(node, ast.Expr) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def _one_string(text: str) -> bool:
    """Whether `text` is one string literal without a prefix (not `"a" "b"`, not `r"a"`)."""
    for quote in ('"""', "'''", '"', "'"):
        if text.startswith(quote):
            inner = text[len(quote) : -len(quote)]
            return (
                len(text) >= 2 * len(quote)
                and text.endswith(quote)
                and quote not in _ESCAPE.sub("", inner)
                and not inner.endswith("\\")
            )
    return False


class NativeScript:
    """A bundled script compiled to Python (see the module contract)."""

    def __init__(self, evaluate: Any, filename: str, deadline_s: float) -> None:
        self._evaluate = evaluate
        self.filename = filename
        self.deadline_s = deadline_s

    def call(self, request: native_ops.NativeRequest) -> ScriptOutcome:
        start = time.monotonic()
        try:
            result = self._evaluate(request)
            raw = NO_MATCH if result is None else interpret(native_ops.plain(result))
        except Exception as exc:  # any raise is the script's error, never the router's
            raw = error_outcome(f"raised: {_message(exc)}{self._where(exc)}")
        if time.monotonic() - start > self.deadline_s:
            raw = error_outcome(f"stopped after {self.deadline_s * 1000:.0f} ms")
        if raw is NO_MATCH:
            return _NONE
        return ScriptOutcome.from_dict(raw)

    def _where(self, exc: BaseException) -> str:
        line = 0
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        return f" (line {line})" if line else ""


def _message(exc: Exception) -> str:
    if isinstance(exc, native_ops.StarlarkLikeError):
        return str(exc)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def compile_native(
    source: str, filename: str, *, deadline_s: float = DEFAULT_DEADLINE_S
) -> NativeScript | None:
    """The script as Python, or None when it is outside the subset (see the module contract)."""
    # A tree `unfit` checked is taken, not shared: the rewrite below changes it in place.
    tree = _CHECKED.pop(source, None)
    if tree is None:
        try:
            tree = _check(source)
        except Unfit:
            return None
    tree = ast.fix_missing_locations(Rewrite(tree).visit(tree))
    namespace: dict[str, Any] = {"__builtins__": {}, **native_ops.HELPERS}
    exec(compile(tree, filename, "exec"), namespace)  # checked above: literals and defs only
    return NativeScript(namespace["evaluate"], filename, deadline_s)
