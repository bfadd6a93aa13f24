"""`index-symbols`: functions, classes and methods of a repository into the entity store.

`index_symbols(store, root)`:
- walks `root` honouring `.gitignore`, keeps files whose extension `symbols.LANG_BY_EXT` knows and
  that are at most MAX_SOURCE_BYTES (larger ones are listed in `errors` as skipped);
- skips a file whose size and mtime equal the `sym_sig` recorded on its file entity; for a changed
  file, drops its old symbols and import edges, then appends:
  * a `symbol` entity per definition, id `sym:<file path>#<qualname>` (`@<line>` added on a clash),
    data {symbol_kind, qualname, line, end_line, lang, rel, file}, provenance EXTRACTED;
  * `defines` edges file -> top-level symbol and `contains` edges class -> member (EXTRACTED);
  * `imports` edges file -> file (or -> dir for a Go package) where the specifier resolves inside
    `root` (INFERRED);
- drops the symbols of files that are gone.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from glider_cli.store.entities.graph import Edge, Entity, EntityStore, Graph, drop_record, unlink_record
from glider_cli.store.entities.symbols import LANG_BY_EXT, FileSymbols, extract
from glider_cli.store.entities.walk import WalkEntry, walk
from glider_cli.values import Frozen, init_fields

Progress = Callable[[int, str], None]

MAX_SOURCE_BYTES = 2_000_000
_JS_EXTS = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", "/index.ts", "/index.tsx", "/index.js")


class SymbolIndexResult(Frozen):
    root: str
    files: int
    parsed: int
    unchanged: int
    symbols: int
    imports: int
    removed: int
    errors: tuple[str, ...]
    by_lang: dict[str, int]
    ms: float

    def __init__(
        self,
        root: str,
        files: int,
        parsed: int,
        unchanged: int,
        symbols: int,
        imports: int,
        removed: int,
        errors: tuple[str, ...],
        by_lang: dict[str, int] | None = None,
        ms: float = 0.0,
    ) -> None:
        init_fields(
            self,
            root,
            files,
            parsed,
            unchanged,
            symbols,
            imports,
            removed,
            errors,
            {} if by_lang is None else by_lang,
            ms,
        )

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["errors"] = list(self.errors)
        return d


class _Resolver:
    """Maps import specifiers to files of the indexed tree (rel paths)."""

    def __init__(self, rels: set[str], dirs: set[str]) -> None:
        self.rels = rels
        self.dirs = dirs
        self.py_modules: dict[str, str] = {}
        self.java: dict[str, str] = {}
        for rel in rels:
            if rel.endswith(".py"):
                mod = rel[:-3].replace("/", ".")
                if mod.endswith(".__init__"):
                    mod = mod[: -len(".__init__")]
                parts = mod.split(".")
                for i in range(len(parts)):
                    self.py_modules.setdefault(".".join(parts[i:]), rel)
            elif rel.endswith(".java"):
                parts = rel[:-5].split("/")
                for i in range(len(parts)):
                    self.java.setdefault(".".join(parts[i:]), rel)

    def resolve(self, lang: str, rel: str, spec: str) -> str | None:
        here = os.path.dirname(rel)
        if lang == "python":
            if spec.startswith("."):
                level = len(spec) - len(spec.lstrip("."))
                base = here
                for _ in range(level - 1):
                    base = os.path.dirname(base)
                tail = spec[level:].replace(".", "/")
                stem = f"{base}/{tail}" if base and tail else base or tail
                for cand in (f"{stem}.py", f"{stem}/__init__.py"):
                    if cand in self.rels:
                        return cand
                return None
            return self.py_modules.get(spec)
        if lang in ("javascript", "typescript", "tsx"):
            if not spec.startswith("."):
                return None
            stem = os.path.normpath(os.path.join(here, spec))
            for ext in _JS_EXTS:
                if stem + ext in self.rels:
                    return stem + ext
            return None
        if lang == "java":
            return self.java.get(spec)
        if lang == "rust" and spec.startswith("mod "):
            name = spec[4:]
            for cand in (
                f"{here}/{name}.rs" if here else f"{name}.rs",
                f"{here}/{name}/mod.rs" if here else f"{name}/mod.rs",
            ):
                if cand in self.rels:
                    return cand
            return None
        if lang == "go":
            for d in self.dirs:
                if d and (spec == d or spec.endswith("/" + d)):
                    return d + "/"
        return None


def index_symbols(
    store: EntityStore,
    root: Path,
    *,
    graph: Graph | None = None,
    progress: Progress | None = None,
) -> SymbolIndexResult:
    """See the module contract."""
    t0 = time.perf_counter()
    g = graph if graph is not None else store.load()
    base = os.path.abspath(root)
    entries = list(walk(Path(base)))
    sources = [e for e in entries if not e.is_dir and os.path.splitext(e.path)[1] in LANG_BY_EXT]
    resolver = _Resolver({e.rel for e in sources}, {e.rel for e in entries if e.is_dir and e.rel != "."})
    records: list[dict[str, Any]] = []
    parsed = unchanged = n_symbols = n_imports = 0
    errors: list[str] = []
    by_lang: dict[str, int] = {}
    for i, entry in enumerate(sources, 1):
        fid = f"file:{entry.path}"
        sig = f"{entry.size}:{entry.mtime_ns}"
        old = g.entities.get(fid)
        if old is not None and old.data.get("sym_sig") == sig:
            unchanged += 1
            continue
        lang = LANG_BY_EXT[os.path.splitext(entry.path)[1]]
        if entry.size > MAX_SOURCE_BYTES:
            # Bundles and generated files: slow to parse, and their symbols are noise.
            errors.append(f"{entry.rel}: skipped, {entry.size} bytes is over {MAX_SOURCE_BYTES}")
            continue
        try:
            source = Path(entry.path).read_bytes()
        except OSError as exc:
            errors.append(f"{entry.rel}: {exc}")
            continue
        found = extract(lang, source)
        if found.error:
            errors.append(f"{entry.rel}: {found.error}")
        parsed += 1
        by_lang[lang] = by_lang.get(lang, 0) + 1
        records += _forget_symbols(g, fid)
        records += _file_records(g, entry, base, lang, sig, old)
        recs, ns, ni = _symbol_records(g, entry, base, lang, found, resolver)
        records += recs
        n_symbols += ns
        n_imports += ni
        if progress is not None:
            progress(i, entry.rel)
    removed = _drop_vanished(g, base, {f"file:{e.path}" for e in sources}, records)
    store.append(records)
    return SymbolIndexResult(
        base,
        len(sources),
        parsed,
        unchanged,
        n_symbols,
        n_imports,
        removed,
        tuple(errors),
        by_lang,
        round((time.perf_counter() - t0) * 1000, 1),
    )


def _forget_symbols(g: Graph, fid: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    stack = g.out_edges(fid, "defines")
    while stack:
        sid = stack.pop()
        stack.extend(g.out_edges(sid, "contains"))
        g.drop(sid)
        records.append(drop_record(sid))
    g.unlink(fid, "imports")
    records.append(unlink_record(fid, "imports"))
    return records


def _file_records(
    g: Graph, entry: WalkEntry, base: str, lang: str, sig: str, old: Entity | None
) -> list[dict[str, Any]]:
    data = dict(old.data) if old is not None else {"rel": entry.rel, "root": base}
    data.update(sym_sig=sig, lang=lang)
    e = Entity(
        f"file:{entry.path}",
        "file",
        os.path.basename(entry.path),
        entry.path,
        old.prov if old is not None else "EXTRACTED",
        old.turn if old is not None else None,
        data,
    )
    g.add_entity(e)
    return [e.record()]


def _symbol_records(
    g: Graph, entry: WalkEntry, base: str, lang: str, found: FileSymbols, resolver: _Resolver
) -> tuple[list[dict[str, Any]], int, int]:
    fid = f"file:{entry.path}"
    records: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    used: set[str] = set()
    for s in found.symbols:
        sid = f"sym:{entry.path}#{s.qualname}"
        if sid in used:
            sid = f"{sid}@{s.line}"
        used.add(sid)
        data = {
            "symbol_kind": s.kind,
            "qualname": s.qualname,
            "line": s.line,
            "end_line": s.end_line,
            "lang": lang,
            "rel": entry.rel,
            "file": fid,
        }
        e = Entity(sid, "symbol", s.name, entry.path, "EXTRACTED", None, data)
        g.add_entity(e)
        records.append(e.record())
        parent_q = s.qualname.rpartition(".")[0]
        parent = ids.get(parent_q) if parent_q else None
        if parent:
            edge = Edge(parent, sid, "contains", "EXTRACTED")
        else:
            edge = Edge(fid, sid, "defines", "EXTRACTED")
        g.add_edge(edge)
        records.append(edge.record())
        ids.setdefault(s.qualname, sid)
    n_imports = 0
    targets: set[str] = set()
    for spec in found.imports:
        target = resolver.resolve(lang, entry.rel, spec)
        if target is None or target == entry.rel:
            continue
        kind = "dir" if target.endswith("/") else "file"
        tid = f"{kind}:{os.path.join(base, target.rstrip('/'))}"
        if tid in targets:
            continue
        targets.add(tid)
        edge = Edge(fid, tid, "imports", "INFERRED")
        g.add_edge(edge)
        records.append(edge.record())
        n_imports += 1
    return records, len(found.symbols), n_imports


def _drop_vanished(g: Graph, base: str, present: set[str], records: list[dict[str, Any]]) -> int:
    prefix = base.rstrip("/") + "/"
    gone = [
        e
        for e in g.entities.values()
        if e.kind == "symbol" and e.path and e.path.startswith(prefix) and e.data.get("file") not in present
    ]
    for e in gone:
        g.drop(e.id)
        records.append(drop_record(e.id))
    return len(gone)
