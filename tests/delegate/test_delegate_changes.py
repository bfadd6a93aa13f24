"""What a delegate changed, as a diff (delegate.changes): from the workspace itself before and after the
run — git trees in a repository (nothing written into it), a file walk elsewhere — never from what the
vendor says; in the reply, the continuity record's outcome and the `DelegateRun` event."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from glider_cli.config.settings import Settings
from glider_cli.delegate import changes, continuity, operations, runner
from glider_cli.delegate.agents import ADAPTERS
from glider_cli.paths import resolve

EDITS = {
    "main.go": "package main\n\nfunc main() {}\n",  # modified: +2 −0
    "AGENTS.md": None,  # deleted: −2
    "pkg/new.go": "package pkg\n",  # added, in a new folder: +1
}


def _run(vendor: str, ws: Path, env: dict[str, str]) -> runner.RunResult:
    return runner.run(ADAPTERS[vendor], None, "fix it", ws, "", resolve().run, timeout=60, environ=env)


def _git_objects(ws: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(ws), "count-objects", "-v"], capture_output=True, text=True, check=True
    )
    return [line for line in out.stdout.splitlines() if line.startswith(("count:", "in-pack:"))]


def _by_path(c: changes.Changes) -> dict[str, tuple[str, int | None, int | None]]:
    return {f.path: (f.status, f.added, f.removed) for f in c.files}


@pytest.mark.parametrize("vendor", ["claude", "codex"])
def test_a_git_workspace_diff_is_the_workspaces_own(vendor: str, fake_agents, git_workspace: Path) -> None:
    objects = _git_objects(git_workspace)
    index = (git_workspace / ".git" / "index").read_bytes()
    # codex claims it changed a file it never touched: the diff ignores the claim.
    env = fake_agents.mode("edit", FAKE_AGENT_EDITS=json.dumps(EDITS), FAKE_AGENT_CLAIM="claimed.go")
    res = _run(vendor, git_workspace, env)
    assert res.ok
    c = res.changes
    assert c.source == "git"
    assert _by_path(c) == {
        "AGENTS.md": ("deleted", 0, 2),
        "main.go": ("modified", 2, 0),
        "pkg/new.go": ("added", 1, 0),
    }
    assert (c.added, c.removed) == (3, 2)
    assert "+func main() {}" in c.diff and "-# Project rules" in c.diff and "+package pkg" in c.diff
    assert "notes.txt" not in c.diff  # dirty before the run, unchanged by it
    # Nothing was written into the repository: no objects, the same index, no run folders left.
    assert _git_objects(git_workspace) == objects
    assert (git_workspace / ".git" / "index").read_bytes() == index
    assert sorted(resolve().run.iterdir()) == []


def test_a_change_to_a_file_dirty_before_the_run_and_an_ignored_file(
    fake_agents, git_workspace: Path
) -> None:
    (git_workspace / ".gitignore").write_text("build/\n")
    edits = {"notes.txt": "dirty before the run\nand one more line\n", "build/out.bin": "ignored\n"}
    res = _run("claude", git_workspace, fake_agents.mode("edit", FAKE_AGENT_EDITS=json.dumps(edits)))
    assert _by_path(res.changes) == {"notes.txt": ("modified", 1, 0)}
    assert "+and one more line" in res.changes.diff


def test_a_plain_folder_is_walked(fake_agents, tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    (ws / "node_modules").mkdir(parents=True)
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    (ws / "gone.txt").write_text("bye\n")
    (ws / "blob.bin").write_bytes(b"\0\1\2")
    edits = {"a.txt": "one\n2\nthree\n", "gone.txt": None, "b/c.txt": "new\n", "node_modules/x.js": "skip\n"}
    res = _run("claude", ws, fake_agents.mode("edit", FAKE_AGENT_EDITS=json.dumps(edits)))
    c = res.changes
    assert c.source == "walk" and c.complete
    assert _by_path(c) == {
        "a.txt": ("modified", 1, 1),
        "b/c.txt": ("added", 1, 0),
        "gone.txt": ("deleted", 0, 1),
    }
    assert "-two\n+2\n" in c.diff


def test_binary_files_count_no_lines(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    (ws / "img.png").write_bytes(b"\x89PNG\0\0")
    snap = changes.take(ws, tmp_path / "scratch")
    (ws / "img.png").write_bytes(b"\x89PNG\0\1")
    c = snap.changes()
    assert _by_path(c) == {"img.png": ("modified", None, None)}
    assert "binary or unknown" in c.render(100)


def test_render_caps_the_hunks_middle_out(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    snap = changes.take(ws, tmp_path / "scratch")
    (ws / "first.txt").write_text("FIRST-HUNK\n")
    (ws / "middle.txt").write_text("".join(f"line {i}\n" for i in range(2000)))
    (ws / "zlast.txt").write_text("LAST-HUNK\n")
    c = snap.changes()
    text = c.render(600)
    assert text.startswith("Changed in the workspace (walk): 3 files, +2002 −0")
    assert "  A middle.txt  +2000 −0" in text
    hunks = text.split("```diff\n", 1)[1]
    assert len(hunks) < 700
    assert "FIRST-HUNK" in hunks and "LAST-HUNK" in hunks and "removed from the middle" in hunks


def test_the_reply_the_record_and_the_event_carry_the_diff(fake_agents, git_workspace: Path) -> None:
    paths = resolve()
    events: list[tuple[str, dict]] = []  # type: ignore[type-arg]

    class Sink:
        def emit(self, kind: str, data: dict, *, turn_id: str | None = None) -> None:  # type: ignore[type-arg]
            events.append((kind, data))

    env = fake_agents.mode("edit", FAKE_AGENT_EDITS=json.dumps(EDITS), FAKE_AGENT_REPLY="done, all green")
    res = operations.delegate(
        paths, Settings(), "claude", "tidy main", git_workspace, "codex", environ=env, events=Sink()
    )
    reply = res.reply_text()
    assert reply.startswith("done, all green\n\nChanged in the workspace (git): 3 files, +3 −2")
    assert "  D AGENTS.md  +0 −2" in reply and "```diff" in reply and "+func main() {}" in reply
    entry = continuity.read(paths, git_workspace).entries[-1]
    assert entry.kind == "delegate"
    assert "Changed in the workspace (git): 3 files, +3 −2" in entry.text and "+package pkg" in entry.text
    run = next(d for k, d in events if k == "DelegateRun")
    assert run["changes"]["added"] == 3 and run["changes"]["removed"] == 2
    assert {f["path"] for f in run["changes"]["files"]} == {"AGENTS.md", "main.go", "pkg/new.go"}
    assert "+func main() {}" in run["changes"]["diff"]


def test_a_run_that_changed_nothing_says_so(fake_agents, git_workspace: Path) -> None:
    res = operations.delegate(
        resolve(), Settings(), "claude", "look only", git_workspace, "codex", environ=fake_agents.mode("ok")
    )
    assert res.reply_text().endswith("Changed in the workspace (git): no changes")
