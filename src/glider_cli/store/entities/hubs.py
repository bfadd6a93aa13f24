"""Hub ranking: which entities of a set are its hubs (`explain`'s hubs, a community's hub).

A hub is code many other code depends on, as a repository map ranks it: PageRank over the import
edges (`imports`, file -> file, or -> a Go package's directory), damping 0.85. Candidates are files
and symbols (a symbol scores half of its file: it stands for part of it); directories, turns and
notes are not, nor is anything under a cache or tool directory (`__pycache__`, `node_modules`,
`.git`, ...), whatever its degree. Order: score, then the number of files importing it, then the
degree, then the id. `ranked(graph, ids)` falls back to degree order for sets without candidates
(a component of directories only). Scores are computed once per graph version.
"""

from __future__ import annotations

from collections.abc import Iterable

from glider_cli.store.entities.graph import Graph

DAMPING = 0.85
ITERATIONS = 30
CACHE_PARTS = frozenset(
    {
        "__pycache__",
        "node_modules",
        ".git",
        ".hg",
        ".svn",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".venv",
        "venv",
        ".cache",
        ".next",
        ".gradle",
    }
)


def is_cache_path(path: str | None) -> bool:
    if not path:
        return False
    return path.endswith((".pyc", ".pyo")) or any(part in CACHE_PARTS for part in path.split("/"))


def pagerank(graph: Graph) -> tuple[dict[str, float], dict[str, int]]:
    """(PageRank over the import edges, import in-degree), memoised per graph version."""
    memo = graph.derived.get("pagerank")
    if memo is not None and memo[0] == graph.version:
        found: tuple[dict[str, float], dict[str, int]] = memo[1]
        return found
    out: dict[str, list[str]] = {}
    indeg: dict[str, int] = {}
    for edge in graph.edges():
        if edge.type == "imports" and edge.src != edge.dst:
            out.setdefault(edge.src, []).append(edge.dst)
            out.setdefault(edge.dst, [])
            indeg[edge.dst] = indeg.get(edge.dst, 0) + 1
    n = len(out)
    rank: dict[str, float] = {}
    if n:
        rank = dict.fromkeys(out, 1.0 / n)
        base = (1.0 - DAMPING) / n
        for _ in range(ITERATIONS):
            dangling = sum(rank[v] for v, dsts in out.items() if not dsts)
            nxt = dict.fromkeys(out, base + DAMPING * dangling / n)
            for v, dsts in out.items():
                if dsts:
                    share = DAMPING * rank[v] / len(dsts)
                    for d in dsts:
                        nxt[d] += share
            rank = nxt
    result = (rank, indeg)
    graph.derived["pagerank"] = (graph.version, result)
    return result


def _file_of(graph: Graph, entity_id: str) -> str | None:
    e = graph.entities.get(entity_id)
    if e is None or not e.path:
        return None
    return f"file:{e.path}"


def ranked(graph: Graph, ids: Iterable[str]) -> list[tuple[str, float]]:
    """The hubs among `ids`, best first, with their scores (see the module contract)."""
    rank, indeg = pagerank(graph)
    scored: list[tuple[float, int, int, str]] = []
    rest: list[str] = []
    for i in ids:
        e = graph.entities.get(i)
        if e is None:
            continue
        if e.kind not in ("file", "symbol") or is_cache_path(e.path):
            rest.append(i)
            continue
        if e.kind == "file":
            score, imported = rank.get(i, 0.0), indeg.get(i, 0)
        else:
            fid = _file_of(graph, i)
            score, imported = (rank.get(fid, 0.0) / 2, 0) if fid else (0.0, 0)
        scored.append((score, imported, graph.degree(i), i))
    if not scored:
        return [(i, float(graph.degree(i))) for i in sorted(rest, key=lambda n: (-graph.degree(n), n))]
    scored.sort(key=lambda s: (-s[0], -s[1], -s[2], s[3]))
    return [(i, round(score, 6)) for score, _, _, i in scored]
