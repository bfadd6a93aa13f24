"""The RUNTIME layer of the graph: what the event log says about turns, added to a Graph.

`add_folds(graph, folds)` (folds from the store index, `store.index.turnfold`), and `add_runtime(graph,
events)` for events at hand (the same, folded first). For each turn:
- a `turn:<id>` entity (data `ask`: the user's words, at most 500 characters) and the turn's
  `first_ts` / `last_ts`;
- its keys `goal`, `plan`, `clone_path` (the latest of each), RUNTIME provenance;
- a `note:<event id>` entity per Note event, with a `noted` edge from the turn;
- a `touched` edge from the turn to every file its events name (`files`: what a delegate changed,
  what the turn's tool calls wrote). A path is joined to the workspace it is relative to (a
  delegate run's `workspace`, else the turn's `clone_path`) and then resolved to the indexed entity of
  that workspace: the file entity with that path, else the one indexed file under the workspace
  whose path ends with the relative path (a delegate's `parser.go` is the indexed `src/parser.go`
  when no other `parser.go` is there). Only a path that resolves to nothing becomes a RUNTIME
  `file:` entity of its own.
So `explain` of an indexed file lists the turns that changed it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from glider_cli.store.entities.graph import Edge, Entity, Graph
from glider_cli.store.index.turnfold import TurnFold, fold_events


class _Files:
    """Indexed (non-RUNTIME) file entities by name, made on first use."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._by_name: dict[str, list[Entity]] | None = None

    def named(self, name: str) -> list[Entity]:
        if self._by_name is None:
            by: dict[str, list[Entity]] = {}
            for e in self.graph.entities.values():
                if e.kind == "file" and e.prov != "RUNTIME" and e.path:
                    by.setdefault(e.name, []).append(e)
            self._by_name = by
        return self._by_name.get(name, [])


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/")


def resolve_file(graph: Graph, files: _Files, raw: str, base: str | None) -> tuple[str, str]:
    """(entity id, absolute path or the path as written) for one file a turn touched."""
    absolute = raw.startswith("/")
    joined = raw if absolute else os.path.join(base, raw) if base else None
    p = os.path.normpath(joined) if joined is not None else raw
    if f"file:{p}" in graph.entities:
        return f"file:{p}", p
    rel = os.path.relpath(p, base) if absolute and base and _under(p, base) else raw
    rel = os.path.normpath(rel)
    if not rel.startswith(".."):
        name = os.path.basename(rel)
        cands = [
            e
            for e in files.named(name)
            if (e.path == p or (e.path or "").endswith("/" + rel))
            and (base is None or _under(e.path or "", base))
        ]
        if len(cands) == 1 and cands[0].path:
            return cands[0].id, cands[0].path
    return f"file:{p}", p


def add_folds(graph: Graph, folds: Iterable[TurnFold]) -> None:
    """See the module contract."""
    files = _Files(graph)
    for f in folds:
        turn = f.turn
        tid = f"turn:{turn}"
        info = graph.turns.setdefault(turn, {})
        if f.first is not None:
            info["first_ts"] = f.first[1]
        if f.last is not None:
            info["last_ts"] = f.last[1]
        data: dict[str, Any] = {"ask": f.text[1]} if f.text else {}
        graph.add_entity(Entity(tid, "turn", turn, None, "RUNTIME", turn, data))
        for k, (_, value) in f.keys.items():
            graph.set_key(turn, k, value, "RUNTIME")
        for nid, text in sorted(f.notes.items()):
            eid = f"note:{nid}"
            graph.add_entity(Entity(eid, "note", text[:80], None, "RUNTIME", turn, {"text": text}))
            graph.add_edge(Edge(tid, eid, "noted", "RUNTIME"))
        base = f.base[1] if f.base else f.key("clone_path")
        for raw in f.file_list():
            fid, p = resolve_file(graph, files, raw, base)
            if fid not in graph.entities:
                graph.add_entity(Entity(fid, "file", os.path.basename(p), p, "RUNTIME", turn, {"rel": raw}))
            graph.add_edge(Edge(tid, fid, "touched", "RUNTIME"))


def add_runtime(graph: Graph, events: Iterable[Mapping[str, Any]]) -> None:
    """The RUNTIME layer of these events (folded first)."""
    add_folds(graph, fold_events(events).values())
