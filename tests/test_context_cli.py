from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from cli_helpers import invoke_json
from glider_cli.cli import app
from glider_cli.paths import Paths
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import make_event
from glider_cli.store.eventlog.writer import EventWriter

runner = CliRunner()
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "store" / "polyglot"


def _json(args: list[str]) -> object:
    return invoke_json(*args)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture
def logged(glider_env: Path, repo: Path) -> Path:
    with EventWriter(Paths(home=glider_env)) as w:
        w.emit("TurnOpened", {"ask": "speed up the parser", "clone_path": str(repo)}, turn_id="t1")
        w.emit("RouteDecided", {"target": "local", "backend": "ollama", "model": "qwen"}, turn_id="t1")
        w.emit("FulfilledLocal", {"backend": "ollama", "status": 200, "files": ["pkg/core.py"]}, turn_id="t1")
        w.emit("Note", {"text": "the parser plan: cache tokens"}, turn_id="t1")
        w.emit("TurnOpened", {"ask": "write docs"}, turn_id="t2")
    return glider_env


def test_turns_turn_episodes_recent(logged: Path) -> None:
    turns = _json(["context", "turns", "--json"])
    assert isinstance(turns, list) and [t["turn_id"] for t in turns] == ["t1", "t2"]
    assert turns[0]["outcome"] == "answered locally by ollama status 200"
    assert turns[0]["files"] == ["pkg/core.py"]
    detail = _json(["context", "turn", "t1", "--json"])
    assert isinstance(detail, dict) and len(detail["events"]) == 4
    assert detail["keys"]["clone_path"]["prov"] == "RUNTIME"
    eps = _json(["context", "episodes", "--limit", "1", "--json"])
    assert isinstance(eps, list) and [e["turn_id"] for e in eps] == ["t2"]
    recent = _json(["context", "recent", "--limit", "2", "--json"])
    assert isinstance(recent, list) and [e["type"] for e in recent] == ["Note", "TurnOpened"]
    human = runner.invoke(app, ["context", "episodes"])
    assert "t1: asked: speed up the parser; routed: local via ollama/qwen" in human.stdout


def test_index_and_query_through_the_cli(logged: Path, repo: Path) -> None:
    tree = _json(["context", "index-tree", str(repo), "--turn", "t1", "--json"])
    assert isinstance(tree, dict) and tree["files"] == 13 and tree["turn_id"] == "t1"
    syms = _json(["context", "index-symbols", str(repo), "--json"])
    assert isinstance(syms, dict) and syms["parsed"] == syms["files"] == 12
    again = _json(["context", "index-symbols", str(repo), "--json"])
    assert isinstance(again, dict) and again["parsed"] == 0 and again["unchanged"] == 12

    results = _json(["context", "query", "t1", "parser", "--json"])
    assert isinstance(results, list)
    ids = [r["id"] for r in results]
    assert ids[0] == f"sym:{repo}/pkg/core.py#Parser"
    assert any(i.startswith("note:") for i in ids)  # the RUNTIME note of the turn
    assert all({"id", "kind", "name", "path", "prov", "score"} <= r.keys() for r in results)
    fuzzy = _json(["context", "query", "t1", "kind=symbol", "slugfy", "--json"])
    assert isinstance(fuzzy, list) and fuzzy[0]["fuzzy"] == {"slugfy": "slugify"}
    human = runner.invoke(app, ["context", "query", "t1", "kind=symbol", "slugfy"])
    assert "matched 'slugify' instead (fuzzy)" in human.stderr
    neigh = _json(["context", "query", "t1", "neigh=turn:t1", "--json"])
    assert isinstance(neigh, list) and {n["edge"] for n in neigh} == {"touched", "noted"}
    key = _json(["context", "query", "t1", "key=file-tree", "--json"])
    assert isinstance(key, list) and key[0]["value"]["files"] == 13
    whole = _json(["context", "query", "t1", "communities=1", "--json"])
    assert isinstance(whole, dict) and whole["count"] == 1  # the tree's contains edges join everything
    comm = _json(["context", "query", "t1", "kind=symbol", "communities=1", "limit=2", "--json"])
    assert isinstance(comm, dict) and comm["algorithm"] == "components" and len(comm["communities"]) == 2
    assert comm["communities"][0]["size"] >= 2 and comm["count"] > 2
    path = _json(["context", "query", "t1", "path=turn:t1->slugify", "--json"])
    assert isinstance(path, dict) and path["found"] and path["path"][1]["id"] == f"file:{repo}/pkg/core.py"


def test_export_is_every_event_then_every_entity_record(logged: Path, repo: Path, tmp_path: Path) -> None:
    runner.invoke(app, ["context", "index-tree", str(repo)])
    out = tmp_path / "export.jsonl"
    assert runner.invoke(app, ["context", "export", "-o", str(out)]).exit_code == 0
    lines = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    events = [x for x in lines if "rec" not in x]
    records = [x for x in lines if "rec" in x]
    assert len(events) == 5 and len(records) == len(lines) - 5 and records
    stdout = runner.invoke(app, ["context", "export"]).stdout_bytes
    assert stdout == out.read_bytes()


def test_query_errors_exit_1_and_point_at_the_token(logged: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "context", "query", "t1", "limit=zero"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "Error: limit='zero' must be a whole number from 1 to 10000 (at position 9)" in proc.stderr
    assert "    t1 limit=zero\n             ^" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_prune_plans_then_acts_with_yes(glider_env: Path) -> None:
    context = Paths(home=glider_env).context
    today = dt.datetime.now(dt.UTC).date()
    for n in (30, 2, 0):
        day = today - dt.timedelta(days=n)
        log.append_events(context, [make_event("0" * 32, "Note", f"{day}T01:00:00.000Z", "t", {})])
    plan = _json(["prune", "--days", "7", "--json"])
    assert isinstance(plan, dict) and plan["applied"] is False
    assert [i["day"] for i in plan["plan"]["delete"]] == [str(today - dt.timedelta(days=30))]
    assert len(log.list_day_files(context)) == 3
    dry = runner.invoke(app, ["prune", "--days", "7", "--yes", "--dry-run"])
    assert dry.exit_code == 0 and "1 to delete" in dry.stdout
    assert len(log.list_day_files(context)) == 3
    done = runner.invoke(app, ["prune", "--days", "7", "--yes"])
    assert done.exit_code == 0 and "deleted 1 files" in done.stdout
    assert [d for d, _ in log.list_day_files(context)] == [today - dt.timedelta(days=2), today]
