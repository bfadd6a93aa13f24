"""`glider continuity show` and `glider continuity block`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from glider_cli.cli import app
from glider_cli.delegate import continuity
from glider_cli.delegate.entry import Entry
from glider_cli.paths import resolve

cli = CliRunner()


def _seed(ws: Path) -> None:
    p = resolve()
    for t in ("style the CSS button", "style the CSS header", "the Go parser panics on empty input"):
        continuity.append(p, ws, Entry(kind="turn", text=t, source_cli="claude-code"))
    continuity.append(
        p,
        ws,
        Entry(
            kind="delegate",
            text="Task: fix parser\nResult: fixed",
            source_cli="claude-code",
            delegate="agy",
            ok=True,
            files=("parser.go",),
        ),
    )
    for t in ("thanks", "ok"):
        continuity.append(p, ws, Entry(kind="turn", text=t, source_cli="codex"))


def test_show_json_newest_last(tmp_path: Path) -> None:
    _seed(tmp_path)
    r = cli.invoke(app, ["continuity", "show", "--workspace", str(tmp_path), "--json"])
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert data["workspace"] == str(tmp_path.resolve())
    assert [e["text"] for e in data["entries"]][-1] == "ok"
    assert data["entries"][3]["kind"] == "delegate" and data["entries"][3]["files"] == ["parser.go"]


def test_show_table(tmp_path: Path) -> None:
    _seed(tmp_path)
    r = cli.invoke(app, ["continuity", "show", "--workspace", str(tmp_path)])
    assert r.exit_code == 0
    assert "agy ok" in r.stdout and "claude-code" in r.stdout and "6 entries" in r.stdout


def test_show_empty_and_corrupt(tmp_path: Path) -> None:
    r = cli.invoke(app, ["continuity", "show", "--workspace", str(tmp_path), "--json"])
    assert json.loads(r.stdout)["entries"] == []
    _seed(tmp_path)
    path = continuity.record_path(resolve(), tmp_path)
    path.write_text("garbage")
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "continuity", "show", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "is corrupt" in proc.stderr
    assert path.read_text() == "garbage"


def test_block_explains_each_entry(tmp_path: Path) -> None:
    _seed(tmp_path)
    r = cli.invoke(
        app,
        ["continuity", "block", "--workspace", str(tmp_path), "--task", "fix the Go parser panic", "--json"],
    )
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    reasons = [(i["kind"], i["reason"]) for i in data["items"]]
    assert reasons[-2:] == [("turn", "protected tail"), ("turn", "protected tail")]
    assert data["items"][0]["text"] == "the Go parser panics on empty input"
    assert data["text"].startswith("# Earlier in the calling session")
    assert any(x["reason"] == "no term shared with the task" for x in data["excluded"])


def test_block_text_is_exactly_the_block(tmp_path: Path) -> None:
    _seed(tmp_path)
    r = cli.invoke(app, ["continuity", "block", "--workspace", str(tmp_path), "--task", "Go parser"])
    j = cli.invoke(
        app, ["continuity", "block", "--workspace", str(tmp_path), "--task", "Go parser", "--json"]
    )
    assert r.stdout == json.loads(j.stdout)["text"]
    assert "protected tail" in r.stderr
