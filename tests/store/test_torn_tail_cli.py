"""A torn tail in the entity store (a crash in the middle of an append) costs nothing after the next
`glider context index-tree`: the record appended next is not glued to the torn bytes (issue 14 §3)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from glider_cli.paths import Paths
from glider_cli.store.entities.graph import EntityStore
from glider_cli.store.eventlog import log

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "store" / "polyglot"


def index_tree(home: Path, repo: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "context", "index-tree", str(repo), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GLIDER_HOME": str(home)},
    )
    assert proc.returncode == 0, proc.stderr


def test_index_tree_after_a_torn_entity_record(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    clean_home, torn_home = tmp_path / "clean", tmp_path / "torn"
    index_tree(clean_home, repo)
    expected = EntityStore(Paths(home=clean_home)).load()
    store = EntityStore(Paths(home=torn_home))
    store.path.parent.mkdir(parents=True)
    store.path.write_bytes(b'{"v":1,"rec":"entity","id":"dir:/gone","kind":"di')  # killed mid-append
    index_tree(torn_home, repo)
    stats = log.ReadStats()
    graph = store.load(stats)
    assert sorted(graph.entities) == sorted(expected.entities)
    assert (stats.torn, stats.corrupt) == (1, 0)
