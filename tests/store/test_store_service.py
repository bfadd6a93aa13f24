from __future__ import annotations

import shutil
from pathlib import Path

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.store.context_store import ContextStore
from glider_cli.store.entities.index_symbols import MAX_SOURCE_BYTES
from glider_cli.store.eventlog.writer import EventWriter

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "store" / "polyglot"


def test_views_follow_the_live_writer_and_the_files(glider_env: Path, tmp_path: Path) -> None:
    paths = Paths(home=glider_env)
    with EventWriter(paths, ContextSettings(max_events=3)) as w:
        store = ContextStore(paths, ContextSettings(max_events=3), w)
        w.emit("TurnOpened", {"ask": "first"}, turn_id="a")
        assert [e["summary"] for e in store.episodes()] == ["asked: first; routed: not routed; outcome: open"]
        assert store.query("a first").results[0]["id"] == "turn:a"
        w.emit("Note", {"text": "remember the retry budget"}, turn_id="a")
        hits = store.query("a retry budget").results  # the cached graph notices the new event
        assert [h["kind"] for h in hits] == ["note"]
        for i in range(4):
            w.emit("Note", {"text": f"n{i}"}, turn_id="b")
        assert [e["data"]["text"] for e in store.recent(10)] == ["n1", "n2", "n3"]  # the ring
        assert len(store.events()) == 6  # the files hold everything

        repo = tmp_path / "repo"
        shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
        (repo / "web" / "bundle.js").write_text("x" * (MAX_SOURCE_BYTES + 1))
        store.index_tree(repo, turn_id="a")
        result = store.index_symbols(repo)
        assert any(e.startswith("web/bundle.js: skipped") for e in result.errors)
        assert store.query("a kind=symbol slugify").results[0]["name"] == "slugify"
        detail = store.turn("a")
        assert detail is not None and detail["keys"]["file-tree"]["value"]["root"] == str(repo)
        assert store.turn("zzz") is None

    cold = ContextStore(paths)
    assert [e["data"].get("text") for e in cold.recent(2)] == ["n2", "n3"]
    assert [t["turn_id"] for t in cold.turns()] == ["a", "b"]
