"""The rewrite of a checked native script (sandbox.native): every operation whose Python meaning
differs from Starlark's becomes a call of its `native_ops` helper; the rest stays Python."""

from __future__ import annotations

import ast

from glider_cli.sandbox import native_ops

CMP = {
    ast.Eq: "g_eq",
    ast.NotEq: "g_ne",
    ast.Lt: "g_lt",
    ast.LtE: "g_le",
    ast.Gt: "g_gt",
    ast.GtE: "g_ge",
    ast.In: "g_in",
    ast.NotIn: "g_not_in",
}
BINOP = {ast.Add: "g_add", ast.Sub: "g_sub"}


class Rewrite(ast.NodeTransformer):
    """Each operation whose meaning differs in Python into its `native_ops` helper. Where the
    meaning is the same whatever the values, the Python operation is kept: `in` with a string on
    the left (a literal, or a loop variable bound only by loops over a top-level list of string
    literals, which nothing can change), a loop over such a list, an integer literal index."""

    def __init__(self, tree: ast.Module) -> None:
        self.str_lists = {
            node.targets[0].id
            for node in tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.List | ast.Tuple)
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts)
        }
        self.local: set[str] = set()
        self.strs: set[str] = set()

    def _str_list(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.str_lists and node.id not in self.local

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        params = {a.arg for a in node.args.args}
        self.local = params | assigned(node)
        stores: dict[str, int] = {}
        loops: dict[str, int] = {}
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
            if isinstance(n, ast.For) and isinstance(n.target, ast.Name) and self._str_list(n.iter):
                loops[n.target.id] = loops.get(n.target.id, 0) + 1
        self.strs = {name for name, k in loops.items() if stores[name] == k and name not in params}
        self.generic_visit(node)
        self.local, self.strs = set(), set()
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)
        op, left = node.ops[0], node.left
        if isinstance(op, ast.In | ast.NotIn) and (
            (isinstance(left, ast.Constant) and isinstance(left.value, str))
            or (isinstance(left, ast.Name) and left.id in self.strs)
        ):
            return node
        return _helper(CMP[type(op)], node, left, node.comparators[0])

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        return _helper(BINOP[type(node.op)], node, node.left, node.right)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        self.generic_visit(node)
        return _helper("g_neg", node, node.operand) if isinstance(node.op, ast.USub) else node

    def visit_For(self, node: ast.For) -> ast.For:
        raw = self._str_list(node.iter)
        self.generic_visit(node)
        if raw:
            return node
        loop = ast.For(
            node.target, _helper("g_iter", node.iter, node.iter), node.body, node.orelse, node.type_comment
        )
        return ast.copy_location(loop, node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        s = node.slice
        index = _int_literal(s)
        if index is not None:
            at = ast.Subscript(self.visit(node.value), ast.copy_location(ast.Constant(index), s), node.ctx)
            return ast.copy_location(at, node)
        self.generic_visit(node)
        s = node.slice
        if isinstance(s, ast.Slice):
            parts = [p if p is not None else ast.Constant(None) for p in (s.lower, s.upper, s.step)]
            return _helper("g_slice", node, node.value, *parts)
        return _helper("g_index", node, node.value, s)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute):
            return _helper(native_ops.METHODS[f.attr][0], node, f.value, *node.args)
        if isinstance(f, ast.Name) and f.id in native_ops.BUILTINS:
            return _helper(native_ops.BUILTINS[f.id][0], node, *node.args)
        return node


def _int_literal(node: ast.expr) -> int | None:
    """The value of `3` or `-1` (not a bool), else None."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return sign * node.value
    return None


def _helper(name: str, where: ast.AST, *args: ast.expr) -> ast.expr:
    call = ast.Call(ast.Name(name, ast.Load()), list(args), [])
    return ast.copy_location(call, where)


def assigned(fn: ast.FunctionDef) -> set[str]:
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
