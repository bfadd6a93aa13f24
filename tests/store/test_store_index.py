from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from glider_cli.errors import StoreError
from glider_cli.paths import Paths
from glider_cli.store.entities.graph import EntityStore
from glider_cli.store.entities.index_symbols import index_symbols
from glider_cli.store.entities.index_tree import index_tree
from glider_cli.store.entities.walk import walk

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "store" / "polyglot"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    # Ignored paths are made here: the project's own .gitignore would keep them out of the fixture.
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("def ignored(): pass\n")
    (root / "debug.log").write_text("noise\n")
    (root / "web" / ".gitignore").write_text("generated.js\n")
    (root / "web" / "generated.js").write_text("function gen() {}\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: x\n")
    (root / "broken.py").write_text("def ok(:\n")
    return root


def test_walk_honours_gitignore_at_every_level(repo: Path) -> None:
    rels = {e.rel for e in walk(repo)}
    assert {"pkg/core.py", "web/app.ts", "gosvc/util/util.go", ".gitignore", "broken.py"} <= rels
    for gone in ("build", "build/out.py", "debug.log", "web/generated.js", ".git", ".git/HEAD"):
        assert gone not in rels
    with pytest.raises(StoreError, match="not a directory"):
        list(walk(repo / "pkg" / "core.py"))


def test_index_tree_writes_entities_and_the_file_tree_key(repo: Path, glider_env: Path) -> None:
    store = EntityStore(Paths(home=glider_env))
    r = index_tree(store, repo, turn_id="t1")
    assert r.changed == r.files + r.dirs and r.unchanged == 0
    g = store.load()
    core = g.entities[f"file:{repo}/pkg/core.py"]
    assert core.kind == "file" and core.prov == "EXTRACTED" and core.turn == "t1"
    assert core.data["rel"] == "pkg/core.py"
    assert f"file:{repo}/pkg/core.py" in g.out_edges(f"dir:{repo}/pkg", "contains")
    key = g.key("t1", "file-tree")
    assert key is not None and key.value == {"root": str(repo), "files": r.files, "dirs": r.dirs}
    assert f"file:{repo}/debug.log" not in g.entities

    again = index_tree(store, repo, turn_id="t1")
    assert again.changed == 0 and again.unchanged == r.files + r.dirs

    (repo / "pkg" / "helpers.py").unlink()
    (repo / "pkg" / "new.py").write_text("x = 1\n")
    third = index_tree(store, repo, turn_id="t1")
    assert third.removed == 1
    g = store.load()
    assert f"file:{repo}/pkg/helpers.py" not in g.entities
    assert f"file:{repo}/pkg/new.py" in g.entities


def test_index_symbols_on_a_multi_language_tree(repo: Path, glider_env: Path) -> None:
    store = EntityStore(Paths(home=glider_env))
    r = index_symbols(store, repo)
    assert r.by_lang == {"python": 4, "typescript": 1, "javascript": 2, "go": 2, "rust": 2, "java": 2}
    assert any(e.startswith("broken.py: SyntaxError") for e in r.errors)
    g = store.load()
    syms = {
        (e.data["rel"], e.data["qualname"]): (e.data["symbol_kind"], e.data["line"])
        for e in g.entities.values()
        if e.kind == "symbol"
    }
    expected = {
        ("pkg/core.py", "Parser"): ("class", 6),
        ("pkg/core.py", "Parser.parse"): ("method", 7),
        ("pkg/core.py", "run"): ("function", 11),
        ("web/app.ts", "Options"): ("interface", 3),
        ("web/app.ts", "Server.start"): ("method", 8),
        ("web/app.ts", "handler"): ("function", 11),
        ("web/lib/dates.js", "formatDate"): ("function", 3),
        ("gosvc/main.go", "Store"): ("type", 8),
        ("gosvc/main.go", "Store.Save"): ("method", 10),
        ("gosvc/util/util.go", "Name"): ("function", 3),
        ("rs/src/main.rs", "Config.load"): ("method", 6),
        ("rs/src/engine.rs", "Engine"): ("interface", 1),
        ("rs/src/engine.rs", "Mode"): ("enum", 5),
        ("java/com/acme/App.java", "App.launch"): ("method", 8),
        ("java/com/acme/Util.java", "Util"): ("interface", 3),
    }
    for k, v in expected.items():
        assert syms.get(k) == v, k
    assert not any(rel.startswith("build/") for rel, _ in syms)

    def imports(rel: str) -> set[str]:
        return {
            d.removeprefix(f"file:{repo}/").removeprefix(f"dir:{repo}/")
            for d in g.out_edges(f"file:{repo}/{rel}", "imports")
        }

    assert imports("pkg/core.py") == {"pkg/__init__.py", "pkg/helpers.py"}
    assert imports("web/app.ts") == {"web/lib/dates.js"}
    assert imports("web/lib/dates.js") == {"web/lib/util.js"}
    assert imports("gosvc/main.go") == {"gosvc/util"}
    assert imports("rs/src/main.rs") == {"rs/src/engine.rs"}
    assert imports("java/com/acme/App.java") == {"java/com/acme/Util.java"}
    edge_provs = {p for _, t, p, _ in g.neighbours(f"file:{repo}/pkg/core.py") if t == "imports"}
    assert edge_provs == {"INFERRED"}
    method = f"sym:{repo}/pkg/core.py#Parser.parse"
    assert method in g.out_edges(f"sym:{repo}/pkg/core.py#Parser", "contains")


def test_reindex_skips_unchanged_and_replaces_changed_symbols(repo: Path, glider_env: Path) -> None:
    store = EntityStore(Paths(home=glider_env))
    first = index_symbols(store, repo)
    again = index_symbols(store, repo)
    assert again.parsed == 0 and again.unchanged == first.files
    helpers = repo / "pkg" / "helpers.py"
    helpers.write_text("def renamed() -> None:\n    pass\n")
    st = helpers.stat()
    os.utime(helpers, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    (repo / "rs" / "src" / "engine.rs").unlink()
    third = index_symbols(store, repo)
    assert third.parsed == 1 and third.removed == 2
    g = store.load()
    names = {e.name for e in g.entities.values() if e.kind == "symbol" and e.data["rel"] == "pkg/helpers.py"}
    assert names == {"renamed"}
    assert not any(e.data.get("rel") == "rs/src/engine.rs" for e in g.entities.values() if e.kind == "symbol")


def test_compaction_keeps_exactly_the_live_graph(repo: Path, glider_env: Path) -> None:
    store = EntityStore(Paths(home=glider_env))
    index_tree(store, repo, turn_id="t1")
    index_symbols(store, repo)
    for n in range(3):  # every round drops and rewrites the symbols of one file
        helpers = repo / "pkg" / "helpers.py"
        helpers.write_text(f"def v{n}() -> None:\n    pass\n" * 50)
        st = helpers.stat()
        os.utime(helpers, ns=(st.st_atime_ns, st.st_mtime_ns + (n + 1) * 10_000_000))
        index_symbols(store, repo)
    before = store.load()
    lines, kept = store.compact(min_waste=0.0)
    after = store.load()
    assert kept < lines
    assert after.entities == before.entities
    assert sorted(after.edges(), key=str) == sorted(before.edges(), key=str)
    assert after.keys == before.keys
    assert store.compact(min_waste=0.5) == (kept, kept)  # nothing dead left: no rewrite
    assert not (store.dir / "entities.jsonl.tmp").exists()
