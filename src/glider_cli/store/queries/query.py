"""Answering a parsed `context query` against a Graph.

`run(graph, text, index=None) -> QueryAnswer`. Modes (see `query_parse` for the grammar):

- search (keywords): a ranked list of result objects
  {"id", "kind", "name", "path", "prov", "score", "turn", "matched", "fuzzy", + rel/line/symbol_kind};
  `fuzzy` maps each misspelt term to the vocabulary word used instead. A keyword naming a turn key
  (`<turn> goal OR plan`) also matches that key of the turns in scope: such keys come first, as
  key results (below), when every other keyword group names a key or a word of its value.
- key (key= without keywords): the turn's key values, {"id": "key:<turn>:<key>", "kind": "key",
  "name", "path": null, "prov", "score": 1.0, "value"}; `key=file-tree keyword…` searches the files
  and directories under the turn's file-tree root; `key=goal keyword…` (clone_path, plan likewise)
  keeps the key values whose words satisfy the keywords, score = the number of matching terms.
- neigh=id: the neighbours as result objects plus "edge" and "direction"; score = their degree.
- path=a->b: {"from", "to", "found", "length", "path": [results], "edges": [edges]}.
- explain=id: {"entity", "degree", "component_size", "neighbours", "hubs", "nearest_hub", "path_to_hub",
  "touched_by"}; hubs are the code hubs of its connected component (`store.entities.hubs`: PageRank over the
  imports, never a directory or a cache), each scored; `touched_by` lists the turns that changed it.
- communities=1: {"algorithm": "components", "count", "communities": [{"id", "size", "hub",
  "members"}]}; a community's hub is its first by `store.entities.hubs`, its members listed by degree
  over the entities in scope; communities=louvain uses networkx when installed.
Scope: the turn id `*` means everything; otherwise entities of that turn, under its roots
(clone_path, file-tree root), or linked to the turn entity. kind=/prov= filter every list.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from typing import Any

from rapidfuzz import process

from glider_cli.errors import QueryError
from glider_cli.store.entities import hubs as hubs_mod
from glider_cli.store.entities.graph import Entity, Graph
from glider_cli.store.queries.query_parse import KEYS, ParsedQuery, parse
from glider_cli.store.queries.search import SearchIndex, tokens
from glider_cli.values import Frozen, init_fields

MAX_MEMBERS = 25
HUBS = 5


class QueryAnswer(Frozen):
    query: ParsedQuery
    mode: str
    results: list[dict[str, Any]]
    detail: dict[str, Any] | None
    fuzzy: dict[str, str]

    def __init__(
        self,
        query: ParsedQuery,
        mode: str,
        results: list[dict[str, Any]] | None = None,
        detail: dict[str, Any] | None = None,
        fuzzy: dict[str, str] | None = None,
    ) -> None:
        init_fields(
            self, query, mode, [] if results is None else results, detail, {} if fuzzy is None else fuzzy
        )

    def to_json(self) -> Any:
        """What `--json` prints: the result list, or the mode's own object."""
        return self.detail if self.detail is not None else self.results


def result(e: Entity, score: float, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": e.id,
        "kind": e.kind,
        "name": e.name,
        "path": e.path,
        "prov": e.prov,
        "score": score,
        "turn": e.turn,
    }
    for k in ("rel", "line", "symbol_kind"):
        if k in e.data:
            d[k] = e.data[k]
    d.update(extra)
    return d


def _error(q: ParsedQuery, message: str, at: str) -> QueryError:
    pos = q.positions.get(at, 0)
    hint = f"\n    {q.text}\n    {' ' * pos}^"
    return QueryError(f"{message} (at position {pos})", position=pos, hint=hint)


class _Ctx:
    def __init__(self, graph: Graph, q: ParsedQuery) -> None:
        self.g = graph
        self.q = q
        if q.turn_id != "*" and q.turn_id not in graph.turns:
            known = tuple(graph.turns)
            best = process.extractOne(q.turn_id, known, score_cutoff=60) if known else None
            hint = f"; did you mean {best[0]!r}?" if best else " (use * for every turn)"
            raise _error(q, f"unknown turn {q.turn_id!r}{hint}", "turn_id")
        self.roots = [] if q.turn_id == "*" else graph.turn_roots(q.turn_id)
        self.linked = set() if q.turn_id == "*" else graph.adjacent(f"turn:{q.turn_id}")

    def in_scope(self, e: Entity) -> bool:
        if self.q.turn_id == "*" or e.turn == self.q.turn_id or e.id in self.linked:
            return True
        p = e.path
        return bool(p) and any(p == r or p.startswith(r + "/") for r in self.roots)  # type: ignore[union-attr]

    def accept(self, e: Entity) -> bool:
        q = self.q
        if q.kind is not None and e.kind != q.kind:
            return False
        if q.prov is not None and e.prov != q.prov:
            return False
        return self.in_scope(e)

    def resolve(self, ref: str, at: str) -> Entity:
        g = self.g
        if ref in g.entities:
            return g.entities[ref]
        for prefix in ("file:", "dir:", "turn:", "note:", "sym:"):
            if prefix + ref in g.entities:
                return g.entities[prefix + ref]
        cands = [
            e
            for e in g.entities.values()
            if e.kind != "symbol" and (e.data.get("rel") == ref or e.path == ref)
        ]
        if not cands:
            cands = [e for e in g.entities.values() if e.data.get("qualname") == ref or e.name == ref]
        if len(cands) > 1:
            scoped = [e for e in cands if self.in_scope(e)]
            cands = scoped or cands
        if len(cands) == 1:
            return cands[0]
        if cands:
            shown = ", ".join(sorted(e.id for e in cands)[:5])
            raise _error(self.q, f"{ref!r} names {len(cands)} entities ({shown}); give an id", at)
        names = list({e.name for e in g.entities.values()})
        best = process.extractOne(ref, names, score_cutoff=70) if names else None
        hint = f"; did you mean {best[0]!r}?" if best else ""
        raise _error(self.q, f"no entity {ref!r}{hint}", at)


def runtime_scope(q: ParsedQuery) -> str | None:
    """Which turns' RUNTIME layer a query needs: None for a search of every turn for symbols or
    directories (the layer holds turns, notes and touched files only); the turn itself for a search
    or key lookup in one turn; `*` (every turn) for the graph modes, whose edges reach any turn."""
    if q.mode == "search" and q.turn_id == "*" and q.key is None and q.kind in ("symbol", "dir"):
        return None
    if q.mode in ("search", "key") and q.turn_id != "*":
        return q.turn_id
    return "*"


def run(graph: Graph, text: str, index: SearchIndex | None = None) -> QueryAnswer:
    q = parse(text)
    ctx = _Ctx(graph, q)
    mode = q.mode
    if mode == "search" and q.key == "file-tree":
        return _search(ctx, index, file_tree=True)
    if mode == "search" and q.key is not None:
        return QueryAnswer(q, "key", _keys(ctx, q.key, q.groups))
    if mode == "search":
        return _search(ctx, index, file_tree=False)
    if mode == "key":
        return QueryAnswer(q, mode, _keys(ctx, q.key or ""))
    if mode == "neigh":
        return QueryAnswer(q, mode, _neigh(ctx, ctx.resolve(q.neigh or "", "neigh")))
    if mode == "path":
        src, dst = q.path or ("", "")
        return QueryAnswer(q, mode, detail=_path(ctx, ctx.resolve(src, "path"), ctx.resolve(dst, "path.to")))
    if mode == "explain":
        return QueryAnswer(q, mode, detail=_explain(ctx, ctx.resolve(q.explain or "", "explain")))
    return QueryAnswer(q, mode, detail=_communities(ctx))


def _search(ctx: _Ctx, index: SearchIndex | None, *, file_tree: bool) -> QueryAnswer:
    q = ctx.q
    idx = index if index is not None and index.version == ctx.g.version else SearchIndex(ctx.g)
    accept: Callable[[Entity], bool] = ctx.accept
    if file_tree:
        ft = ctx.g.key(q.turn_id, "file-tree") if q.turn_id != "*" else None
        roots = [ft.value["root"]] if ft is not None and isinstance(ft.value, dict) else ctx.roots
        if q.turn_id != "*" and not roots:
            raise _error(q, f"turn {q.turn_id!r} has no file-tree key; run index-tree --turn", "key")

        def accept(e: Entity) -> bool:
            if e.kind not in ("file", "dir") or not ctx.accept(e):
                return False
            return not roots or any(e.path == r or (e.path or "").startswith(r + "/") for r in roots)

    keyed = [] if file_tree or q.kind is not None else _named_keys(ctx)
    hits, fuzzy = idx.search(q.groups, accept=accept, limit=q.limit)
    results = keyed + [
        result(
            h.entity,
            h.score,
            matched=list(h.matched),
            fuzzy={t: s for t, s in fuzzy.items() if s in h.matched},
        )
        for h in hits
    ]
    return QueryAnswer(q, "search", results[: q.limit], fuzzy=fuzzy)


def _named_keys(ctx: _Ctx) -> list[dict[str, Any]]:
    """Turn keys a search names (`goal OR plan`): a key matches when one keyword group holds its name
    and every other group a name or a word of its value."""
    groups = ctx.q.groups
    named = {k for g in groups for k in g if k in KEYS}
    if not named:
        return []
    turns = sorted(ctx.g.keys) if ctx.q.turn_id == "*" else [ctx.q.turn_id]
    out = []
    for t in turns:
        for key in sorted(named):
            kv = ctx.g.key(t, key)
            if kv is None or (ctx.q.prov is not None and kv.prov != ctx.q.prov):
                continue
            words = set(tokens(str(kv.value)))
            hits = [[term for term in g if term == key or set(tokens(term)) <= words] for g in groups]
            if all(hits):
                score = float(sum(len(h) for h in hits))
                out.append(_key_result(t, key, kv.prov, kv.value, score))
    return out


def _key_result(turn: str, key: str, prov: str, value: Any, score: float) -> dict[str, Any]:
    return {
        "id": f"key:{turn}:{key}",
        "kind": "key",
        "name": key,
        "path": None,
        "prov": prov,
        "score": score,
        "turn": turn,
        "value": value,
    }


def _keys(ctx: _Ctx, key: str, groups: tuple[tuple[str, ...], ...] = ()) -> list[dict[str, Any]]:
    turns = list(ctx.g.keys) if ctx.q.turn_id == "*" else [ctx.q.turn_id]
    out = []
    for t in sorted(turns):
        kv = ctx.g.key(t, key)
        if kv is None:
            continue
        score = 1.0
        if groups:
            words = set(tokens(str(kv.value)))
            hits = [[term for term in g if set(tokens(term)) <= words] for g in groups]
            if not all(hits):
                continue
            score = float(sum(len(h) for h in hits))
        out.append(_key_result(t, key, kv.prov, kv.value, score))
    out.sort(key=lambda r: -r["score"])
    return out[: ctx.q.limit]


def _neigh(ctx: _Ctx, e: Entity) -> list[dict[str, Any]]:
    g = ctx.g
    out = []
    for other, etype, prov, direction in g.neighbours(e.id):
        o = g.entities.get(other)
        if o is None or (ctx.q.kind and o.kind != ctx.q.kind) or (ctx.q.prov and prov != ctx.q.prov):
            continue
        out.append(result(o, float(g.degree(other)), edge=etype, edge_prov=prov, direction=direction))
    out.sort(key=lambda r: (-r["score"], r["id"]))
    return out[: ctx.q.limit]


def _bfs(g: Graph, start: str, goal: Callable[[str], bool], allowed: Callable[[str], bool]) -> list[str]:
    prev: dict[str, str | None] = {start: None}
    todo = deque([start])
    while todo:
        cur = todo.popleft()
        if cur != start and goal(cur):
            path = [cur]
            while (p := prev[path[-1]]) is not None:
                path.append(p)
            return path[::-1]
        for nxt in sorted(g.adjacent(cur)):
            if nxt not in prev and allowed(nxt):
                prev[nxt] = cur
                todo.append(nxt)
    return []


def _edges_along(g: Graph, ids: list[str]) -> list[dict[str, Any]]:
    out = []
    for a, b in itertools.pairwise(ids):
        for other, etype, prov, direction in g.neighbours(a):
            if other == b:
                src, dst = (a, b) if direction == "out" else (b, a)
                out.append({"src": src, "dst": dst, "type": etype, "prov": prov})
                break
    return out


def _path(ctx: _Ctx, a: Entity, b: Entity) -> dict[str, Any]:
    g = ctx.g
    ids = [a.id] if a.id == b.id else _bfs(g, a.id, lambda n: n == b.id, lambda n: n in g.entities)
    return {
        "from": a.id,
        "to": b.id,
        "found": bool(ids),
        "length": len(ids) - 1 if ids else None,
        "path": [result(g.entities[i], float(g.degree(i))) for i in ids],
        "edges": _edges_along(g, ids),
    }


def _component(g: Graph, start: str, allowed: Callable[[str], bool]) -> set[str]:
    seen = {start}
    todo = [start]
    while todo:
        for nxt in g.adjacent(todo.pop()):
            if nxt not in seen and allowed(nxt):
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _explain(ctx: _Ctx, e: Entity) -> dict[str, Any]:
    g = ctx.g
    comp = _component(g, e.id, lambda n: n in g.entities)
    hubs = [(n, s) for n, s in hubs_mod.ranked(g, (n for n in comp if n != e.id)) if s > 0 or g.degree(n) > 1]
    hubs = hubs[:HUBS]
    hub_set = {n for n, _ in hubs}
    path = _bfs(g, e.id, lambda n: n in hub_set, lambda n: n in g.entities) if hubs else []
    touched_by = sorted(s for s, t, _, d in g.neighbours(e.id) if t == "touched" and d == "in")
    return {
        "entity": result(e, float(g.degree(e.id))),
        "degree": g.degree(e.id),
        "component_size": len(comp),
        "neighbours": _neigh(ctx, e),
        "hubs": [result(g.entities[n], s) for n, s in hubs],
        "nearest_hub": path[-1] if path else None,
        "path_to_hub": path,
        "touched_by": touched_by,
    }


def _communities(ctx: _Ctx) -> dict[str, Any]:
    g = ctx.g
    members = {i for i, e in g.entities.items() if ctx.accept(e)}
    algorithm = ctx.q.communities or "components"
    groups: list[set[str]]
    if algorithm == "louvain":
        groups = _louvain(ctx, members)
    else:
        groups, left = [], set(members)
        for n in sorted(members):
            if n in left:
                comp = _component(g, n, lambda x: x in members)
                left -= comp
                groups.append(comp)
    groups.sort(key=lambda c: (-len(c), min(c)))
    out = []
    for i, comp in enumerate(groups[: ctx.q.limit]):
        ranked = sorted(comp, key=lambda n: (-g.degree(n), n))
        hub = hubs_mod.ranked(g, comp)[0][0]
        out.append({"id": i, "size": len(comp), "hub": hub, "members": ranked[:MAX_MEMBERS]})
    return {"algorithm": algorithm, "count": len(groups), "communities": out}


def _louvain(ctx: _Ctx, members: set[str]) -> list[set[str]]:
    try:
        import networkx as nx
    except ImportError as exc:
        raise _error(
            ctx.q, "communities=louvain needs networkx (pip install 'glider-cli[graph]')", "communities"
        ) from exc
    G = nx.Graph()
    G.add_nodes_from(members)
    for edge in ctx.g.edges():
        if edge.src in members and edge.dst in members and edge.src != edge.dst:
            G.add_edge(edge.src, edge.dst)
    return [set(c) for c in nx.community.louvain_communities(G, seed=0)]
