from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glider_cli.errors import QueryError
from glider_cli.store.entities.graph import Edge, Entity, Graph
from glider_cli.store.queries.query import run
from glider_cli.store.queries.query_parse import parse


def _graph() -> Graph:
    g = Graph()
    root = "/r"
    ents = [
        Entity("dir:/r", "dir", "r", "/r", "EXTRACTED", "t1", {"rel": ".", "root": root}),
        Entity("dir:/r/pkg", "dir", "pkg", "/r/pkg", "EXTRACTED", "t1", {"rel": "pkg", "root": root}),
        Entity(
            "file:/r/pkg/core.py",
            "file",
            "core.py",
            "/r/pkg/core.py",
            "EXTRACTED",
            "t1",
            {"rel": "pkg/core.py"},
        ),
        Entity(
            "file:/r/pkg/helpers.py",
            "file",
            "helpers.py",
            "/r/pkg/helpers.py",
            "EXTRACTED",
            "t1",
            {"rel": "pkg/helpers.py"},
        ),
        Entity(
            "file:/r/README.md", "file", "README.md", "/r/README.md", "EXTRACTED", "t1", {"rel": "README.md"}
        ),
        Entity(
            "sym:/r/pkg/core.py#Parser",
            "symbol",
            "Parser",
            "/r/pkg/core.py",
            "EXTRACTED",
            None,
            {"qualname": "Parser", "rel": "pkg/core.py", "line": 3, "symbol_kind": "class"},
        ),
        Entity(
            "sym:/r/pkg/core.py#Parser.parse_tokens",
            "symbol",
            "parse_tokens",
            "/r/pkg/core.py",
            "EXTRACTED",
            None,
            {"qualname": "Parser.parse_tokens", "rel": "pkg/core.py", "line": 4, "symbol_kind": "method"},
        ),
        Entity(
            "sym:/r/pkg/helpers.py#slugify",
            "symbol",
            "slugify",
            "/r/pkg/helpers.py",
            "EXTRACTED",
            None,
            {"qualname": "slugify", "rel": "pkg/helpers.py", "line": 1, "symbol_kind": "function"},
        ),
        Entity(
            "sym:/elsewhere/x.py#Parser",
            "symbol",
            "Parser",
            "/elsewhere/x.py",
            "EXTRACTED",
            None,
            {"qualname": "Parser", "rel": "x.py", "line": 1, "symbol_kind": "class"},
        ),
        Entity(
            "note:n1",
            "note",
            "the goal is a faster parser",
            None,
            "RUNTIME",
            "t2",
            {"text": "the goal is a faster parser"},
        ),
        Entity(
            "note:n2",
            "note",
            "plan: split the module",
            None,
            "RUNTIME",
            "t2",
            {"text": "plan: split the module"},
        ),
        Entity("dir:/island", "dir", "island", "/island", "EXTRACTED", None, {"rel": "island"}),
    ]
    for e in ents:
        g.add_entity(e)
    for src, dst, t, p in [
        ("dir:/r", "dir:/r/pkg", "contains", "EXTRACTED"),
        ("dir:/r", "file:/r/README.md", "contains", "EXTRACTED"),
        ("dir:/r/pkg", "file:/r/pkg/core.py", "contains", "EXTRACTED"),
        ("dir:/r/pkg", "file:/r/pkg/helpers.py", "contains", "EXTRACTED"),
        ("file:/r/pkg/core.py", "sym:/r/pkg/core.py#Parser", "defines", "EXTRACTED"),
        ("sym:/r/pkg/core.py#Parser", "sym:/r/pkg/core.py#Parser.parse_tokens", "contains", "EXTRACTED"),
        ("file:/r/pkg/helpers.py", "sym:/r/pkg/helpers.py#slugify", "defines", "EXTRACTED"),
        ("file:/r/pkg/core.py", "file:/r/pkg/helpers.py", "imports", "INFERRED"),
    ]:
        g.add_edge(Edge(src, dst, t, p))
    g.set_key("t1", "file-tree", {"root": "/r", "files": 3, "dirs": 2}, "EXTRACTED")
    g.set_key("t1", "goal", "make the parser faster", "RUNTIME")
    g.turns.setdefault("t2", {})
    return g


G = _graph()


def ids(text: str) -> list[str]:
    return [r["id"] for r in run(G, text).results]


def test_every_result_has_the_documented_fields() -> None:
    for r in run(G, "* parser").results:
        assert {"id", "kind", "name", "path", "prov", "score"} <= r.keys()


def test_ranking_puts_the_exact_name_first_and_scopes_to_the_turn() -> None:
    got = ids("t1 parser")
    assert got[0] == "sym:/r/pkg/core.py#Parser"
    assert "sym:/elsewhere/x.py#Parser" not in got  # outside t1's file-tree root
    assert "sym:/elsewhere/x.py#Parser" in ids("* parser")
    scores = [r["score"] for r in run(G, "* parser").results]
    assert scores == sorted(scores, reverse=True)


def test_camel_and_snake_parts_match() -> None:
    assert ids("t1 tokens") == ["sym:/r/pkg/core.py#Parser.parse_tokens"]
    assert "file:/r/pkg/core.py" in ids("t1 core.py")


def test_and_or_and_pipe() -> None:
    assert set(ids("t2 goal OR plan")) == {"note:n1", "note:n2"}
    assert set(ids("t2 goal|plan")) == {"note:n1", "note:n2"}
    assert ids("t2 goal plan") == []
    assert ids("t2 faster parser") == ["note:n1"]


def test_kind_prov_and_limit_filter() -> None:
    assert {r["kind"] for r in run(G, "* kind=symbol parser").results} == {"symbol"}
    assert {r["prov"] for r in run(G, "* prov=runtime parser").results} == {"RUNTIME"}
    assert len(ids("* limit=1 parser")) == 1


def test_fuzzy_match_is_reported() -> None:
    ans = run(G, "t1 slugfy")
    assert ans.fuzzy == {"slugfy": "slugify"}
    assert ans.results[0]["id"] == "sym:/r/pkg/helpers.py#slugify"
    assert ans.results[0]["fuzzy"] == {"slugfy": "slugify"}


def test_keys() -> None:
    assert run(G, "t1 key=goal").results[0]["value"] == "make the parser faster"
    assert run(G, "t1 key=file-tree").results[0]["value"]["root"] == "/r"
    assert set(ids("t1 key=file-tree core OR readme")) == {"file:/r/pkg/core.py", "file:/r/README.md"}
    assert [r["id"] for r in run(G, "t1 key=goal faster").results] == ["key:t1:goal"]
    assert run(G, "t1 key=goal slower").results == []
    assert run(G, "* key=goal parser OR lexer").results[0]["score"] == 1.0
    with pytest.raises(QueryError, match="no file-tree key"):
        run(G, "t2 key=file-tree parser")


def test_neigh_path_explain_communities() -> None:
    neigh = run(G, "t1 neigh=pkg/core.py").results
    assert {(r["id"], r["edge"], r["direction"]) for r in neigh} == {
        ("dir:/r/pkg", "contains", "in"),
        ("sym:/r/pkg/core.py#Parser", "defines", "out"),
        ("file:/r/pkg/helpers.py", "imports", "out"),
    }
    path = run(G, "t1 path=README.md->slugify").to_json()
    assert path["found"] and [p["id"] for p in path["path"]] == [
        "file:/r/README.md",
        "dir:/r",
        "dir:/r/pkg",
        "file:/r/pkg/helpers.py",
        "sym:/r/pkg/helpers.py#slugify",
    ]
    assert path["length"] == 4 and path["edges"][0] == {
        "src": "dir:/r",
        "dst": "file:/r/README.md",
        "type": "contains",
        "prov": "EXTRACTED",
    }
    none = run(G, "* path=README.md->dir:/island").to_json()
    assert none["found"] is False and none["path"] == []
    ex = run(G, "t1 explain=sym:/r/pkg/core.py#Parser.parse_tokens").to_json()
    # The imported file is the hub, not the directory holding it (issue 17: hubs are code).
    assert ex["degree"] == 1 and ex["hubs"][0]["id"] == "file:/r/pkg/helpers.py"
    assert all(not h["id"].startswith("dir:") for h in ex["hubs"])
    assert ex["path_to_hub"][0] == "sym:/r/pkg/core.py#Parser.parse_tokens"
    assert ex["nearest_hub"] in {h["id"] for h in ex["hubs"]}
    comm = run(G, "* communities=1").to_json()
    assert comm["algorithm"] == "components"
    assert [c["size"] for c in comm["communities"]][:2] == [8, 1]
    assert comm["count"] == 5
    assert comm["communities"][0]["hub"] == "file:/r/pkg/helpers.py"


def test_louvain_is_an_option() -> None:
    pytest.importorskip("networkx")
    ans = run(G, "* communities=louvain").to_json()
    assert ans["algorithm"] == "louvain"
    assert sum(c["size"] for c in ans["communities"]) == len(G.entities)
    assert ans["count"] >= 5  # never merges separate components


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("", 0, "empty query"),
        ("kind=file x", 0, "expected a turn id"),
        ("t1 kidn=file", 3, "did you mean 'kind'"),
        ("t1 kind=fiel", 8, "did you mean 'file'"),
        ("t1 prov=guessed", 8, "not one of"),
        ("t1 key=goals", 7, "did you mean 'goal'"),
        ("t1 limit=-3", 9, "whole number"),
        ("t1 limit=abc", 9, "whole number"),
        ("t1 limit=", 9, "needs a value"),
        ("t1 limit=2 limit=3", 11, "given twice"),
        ("t1 path=a-b", 8, "<from>-><to>"),
        ("t1 path=->b", 8, "before '->'"),
        ("t1 path=a->", 11, "after '->'"),
        ("t1 neigh=a explain=b", 11, "cannot be combined"),
        ("t1 communities=2", 15, "communities=1"),
        ("t1 OR x", 3, "on its left"),
        ("t1 x OR", 5, "on its right"),
        ("t1 x OR | y", 8, "on its left"),
        ("t1  ***", 4, "no letters"),
        ("nope parser", 0, "unknown turn"),
        ("t1 neigh=nothing-like-it", 9, "no entity"),
        ("* explain=Parser", 10, "names 2 entities"),
        ("t1 path=README.md->missing", 19, "no entity"),
    ],
)
def test_errors_point_at_the_bad_token(text: str, position: int, message: str) -> None:
    with pytest.raises(QueryError) as info:
        run(G, text)
    assert info.value.position == position
    assert message in info.value.message
    assert info.value.hint is not None and info.value.hint.endswith(" " * position + "^")


_atoms = st.one_of(
    st.sampled_from(
        [
            "OR",
            "|",
            "a|b",
            "parser",
            "key=goal",
            "kind=file",
            "kind=x",
            "prov=RUNTIME",
            "limit=3",
            "limit=0",
            "path=a->b",
            "neigh=pkg",
            "explain=slugify",
            "communities=1",
            "=",
            "x=",
            "->",
        ]
    ),
    st.text(min_size=1, max_size=8),
)


@settings(max_examples=300, deadline=None)
@given(turn=st.sampled_from(["t1", "t2", "*", "zz", "OR"]), rest=st.lists(_atoms, max_size=6))
def test_any_input_answers_or_errors_cleanly(turn: str, rest: list[str]) -> None:
    text = " ".join([turn, *rest])
    try:
        ans = run(G, text)
    except QueryError as exc:
        assert exc.position is not None and 0 <= exc.position <= len(text)
        return
    assert isinstance(ans.to_json(), list | dict)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_parse_never_raises_anything_but_query_error(text: str) -> None:
    try:
        q = parse(text)
    except QueryError as exc:
        assert exc.position is not None and 0 <= exc.position <= len(text)
        return
    assert q.turn_id and 1 <= q.limit <= 10_000
