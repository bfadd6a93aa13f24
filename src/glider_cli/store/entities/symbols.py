"""Symbol extraction for one source file: definitions with line numbers, and the imports it names.

`extract(lang, source)` -> FileSymbols. Python goes through `ast`; JavaScript, TypeScript (and TSX),
Go, Rust and Java through the tree-sitter grammars published on PyPI. A file that does not parse
yields what could be read (tree-sitter recovers from errors; a Python SyntaxError yields nothing and
sets `error`). Symbol kinds: function, method, class, interface, type, enum, module.
Imports are the raw specifiers (`a.b.c`, `./x`, `fmt`, `crate::a`, `mod foo`); resolving them to
files is `index_symbols`' job.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import Any

from glider_cli.values import Frozen

LANG_BY_EXT: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}


class Symbol(Frozen):
    name: str
    qualname: str
    kind: str
    line: int
    end_line: int

    def __init__(self, name: str, qualname: str, kind: str, line: int, end_line: int) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.name = name
        s.qualname = qualname
        s.kind = kind
        s.line = line
        s.end_line = end_line


class FileSymbols:
    """What one file declares, filled in as the extractor walks it (state, not a value)."""

    def __init__(self, error: str | None = None) -> None:
        self.symbols: list[Symbol] = []
        self.imports: list[str] = []
        self.error = error  # why the file could not be parsed (nothing else is filled in then)


def extract(lang: str, source: bytes) -> FileSymbols:
    if lang == "python":
        return _python(source)
    return _TreeSitterExtractor(lang).run(source)


# -- Python ---------------------------------------------------------------------------------------


def _python(source: bytes) -> FileSymbols:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        return FileSymbols(error=f"{type(exc).__name__}: {exc}")
    out = FileSymbols()

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                q = f"{prefix}{node.name}"
                out.symbols.append(Symbol(node.name, q, "class", node.lineno, node.end_lineno or node.lineno))
                visit(node.body, q + ".", True)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                q = f"{prefix}{node.name}"
                kind = "method" if in_class else "function"
                out.symbols.append(Symbol(node.name, q, kind, node.lineno, node.end_lineno or node.lineno))
                visit(node.body, q + ".", False)
            elif isinstance(node, ast.Import):
                out.imports.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                mod = "." * node.level + (node.module or "")
                out.imports.append(mod)
                sep = "" if mod.endswith(".") else "."
                out.imports.extend(f"{mod}{sep}{a.name}" for a in node.names if a.name != "*")
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for part in ("body", "orelse", "finalbody"):
                    visit(getattr(node, part, []) or [], prefix, in_class)
                for h in getattr(node, "handlers", []) or []:
                    visit(h.body, prefix, in_class)

    visit(tree.body, "", False)
    return out


# -- tree-sitter ----------------------------------------------------------------------------------

# node type -> symbol kind, per grammar. Containers push their name onto the qualified name.
_DEFS: dict[str, dict[str, str]] = {
    "javascript": {
        "function_declaration": "function",
        "generator_function_declaration": "function",
        "class_declaration": "class",
        "method_definition": "method",
    },
    "go": {
        "function_declaration": "function",
        "method_declaration": "method",
        "type_spec": "type",
    },
    "rust": {
        "function_item": "function",
        "struct_item": "type",
        "enum_item": "enum",
        "trait_item": "interface",
        "mod_item": "module",
    },
    "java": {
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "class",
        "method_declaration": "method",
        "constructor_declaration": "method",
    },
}
_DEFS["typescript"] = {
    **_DEFS["javascript"],
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
}
_DEFS["tsx"] = _DEFS["typescript"]
_CONTAINERS = frozenset(
    {
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "trait_item",
        "mod_item",
    }
)


@functools.cache
def _parser(lang: str) -> Any:
    import tree_sitter

    loaders: dict[str, Callable[[], Any]] = {
        "javascript": lambda: __import__("tree_sitter_javascript").language(),
        "typescript": lambda: __import__("tree_sitter_typescript").language_typescript(),
        "tsx": lambda: __import__("tree_sitter_typescript").language_tsx(),
        "go": lambda: __import__("tree_sitter_go").language(),
        "rust": lambda: __import__("tree_sitter_rust").language(),
        "java": lambda: __import__("tree_sitter_java").language(),
    }
    return tree_sitter.Parser(tree_sitter.Language(loaders[lang]()))


def _text(node: Any) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


class _TreeSitterExtractor:
    def __init__(self, lang: str) -> None:
        self.lang = lang
        self.defs = _DEFS[lang]
        self.out = FileSymbols()

    def run(self, source: bytes) -> FileSymbols:
        tree = _parser(self.lang).parse(source)
        self._visit(tree.root_node, [], in_type=False)
        return self.out

    def _visit(self, node: Any, scope: list[str], in_type: bool) -> None:
        for child in node.named_children:
            t = child.type
            kind = self.defs.get(t)
            name_node = child.child_by_field_name("name")
            if kind is not None and name_node is not None:
                name = _text(name_node)
                if self.lang == "go" and t == "method_declaration":
                    recv = child.child_by_field_name("receiver")
                    rtype = _go_receiver(recv) if recv is not None else ""
                    q = f"{rtype}.{name}" if rtype else name
                else:
                    if kind == "function" and in_type:
                        kind = "method"
                    q = ".".join([*scope, name])
                self.out.symbols.append(
                    Symbol(name, q, kind, child.start_point[0] + 1, child.end_point[0] + 1)
                )
                if t == "mod_item" and child.child_by_field_name("body") is None:
                    self.out.imports.append(f"mod {name}")
                if t in _CONTAINERS:
                    self._visit(child, [*scope, name], in_type=t != "mod_item")
                else:
                    self._visit(child, [*scope, name], in_type=False)
                continue
            if t == "lexical_declaration" or t == "variable_declaration":
                self._js_function_vars(child, scope)
            elif t == "impl_item":
                ty = child.child_by_field_name("type")
                self._visit(child, [*scope, _text(ty)] if ty is not None else scope, in_type=True)
                continue
            elif t in ("import_statement", "export_statement") and child.child_by_field_name("source"):
                self.out.imports.append(_text(child.child_by_field_name("source")).strip("'\"`"))
            elif t == "call_expression" and self.lang in ("javascript", "typescript", "tsx"):
                self._require(child)
            elif t == "import_spec":
                p = child.child_by_field_name("path")
                if p is not None:
                    self.out.imports.append(_text(p).strip('"`'))
            elif t == "use_declaration":
                arg = child.child_by_field_name("argument")
                if arg is not None:
                    self.out.imports.append(_text(arg))
            elif t == "import_declaration" and self.lang == "java":
                self.out.imports.append(_text(child).removeprefix("import").strip().rstrip(";").strip())
                continue
            self._visit(child, scope, in_type)

    def _js_function_vars(self, decl: Any, scope: list[str]) -> None:
        for d in decl.named_children:
            if d.type != "variable_declarator":
                continue
            name = d.child_by_field_name("name")
            value = d.child_by_field_name("value")
            if name is None or value is None:
                continue
            if value.type in ("arrow_function", "function_expression", "function"):
                n = _text(name)
                self.out.symbols.append(
                    Symbol(n, ".".join([*scope, n]), "function", d.start_point[0] + 1, d.end_point[0] + 1)
                )

    def _require(self, call: Any) -> None:
        fn = call.child_by_field_name("function")
        args = call.child_by_field_name("arguments")
        if fn is None or args is None or _text(fn) != "require":
            return
        strings = [a for a in args.named_children if a.type == "string"]
        if strings:
            self.out.imports.append(_text(strings[0]).strip("'\"`"))


def _go_receiver(recv: Any) -> str:
    text = _text(recv).strip("()").split()
    return text[-1].lstrip("*") if text else ""
