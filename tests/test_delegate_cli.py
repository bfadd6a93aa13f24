"""`glider delegate` end to end with fake vendor CLIs on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fixtures.fake_agents.install import install_fake_agents, path_with, runs
from glider_cli.cli import app
from glider_cli.delegate import continuity
from glider_cli.delegate.entry import Entry
from glider_cli.paths import resolve

cli = CliRunner()


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = install_fake_agents(tmp_path / "bin")
    monkeypatch.setenv("PATH", path_with(bin_dir))
    monkeypatch.setenv("FAKE_AGENT_LOG", str(tmp_path / "log"))
    for marker in (
        "CLAUDECODE",
        "CODEX_THREAD_ID",
        "CODEX_SANDBOX",
        "CODEX_SANDBOX_NETWORK_DISABLED",
        "GEMINI_CLI",
    ):
        monkeypatch.delenv(marker, raising=False)  # these tests may run inside an agent's shell
    return tmp_path / "log"


def test_delegate_json_records_the_outcome(fakes: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    continuity.append(resolve(), ws, Entry(kind="turn", text="the parser panics", source_cli="x"))
    r = cli.invoke(app, ["delegate", "--codex", "--workspace", str(ws), "--json", "fix the parser panic"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["ok"] and data["vendor"] == "codex" and data["text"] == "fake codex did it"
    assert data["block_entries"] == 1
    assert "the parser panics" in runs(fakes)[-1]["context"]
    last = continuity.read(resolve(), ws).entries[-1]
    assert last.kind == "delegate" and last.source_cli == "glider-cli" and last.delegate == "codex"
    events = [
        json.loads(line)
        for f in sorted(resolve().context.glob("events-*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    (run,) = [e for e in events if e["type"] == "DelegateRun"]
    assert run["data"]["vendor"] == "codex" and run["data"]["ok"] is True
    assert run["data"]["summary"] == "fake codex did it" and isinstance(run["data"]["ms"], int)


def test_delegate_needs_exactly_one_vendor(tmp_path: Path) -> None:
    r = cli.invoke(app, ["delegate", "--claude", "--agy", "x"])
    assert r.exit_code == 2
    r = cli.invoke(app, ["delegate", "x"])
    assert r.exit_code == 2


def test_delegate_failure_exits_1_with_a_message(fakes: Path, tmp_path: Path) -> None:
    env = {**os.environ, "FAKE_AGENT_MODE": "hang"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "glider_cli",
            "delegate",
            "--agy",
            "--timeout",
            "1",
            "--workspace",
            str(tmp_path),
            "do something",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "Error: agy did not complete the task (timed out)" in proc.stderr
    assert not any(resolve().run.iterdir())


def test_delegate_text_output(fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_AGENT_REPLY", "all done")
    ws = tmp_path / "ws"  # not tmp_path: the fake agents write their logs there
    ws.mkdir()
    r = cli.invoke(app, ["delegate", "--cursor-agent", "--workspace", str(ws), "tidy up"])
    assert r.exit_code == 0
    assert r.stdout == "all done\n\nChanged in the workspace (walk): no changes\n"
    assert "cursor-agent: ok" in r.stderr


def _ws_and_env(tmp_path: Path, **extra: str) -> tuple[Path, dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDECODE", "CODEX_", "GEMINI_CLI"))}
    return ws, {**env, **extra}


def test_delegate_from_an_agents_shell_records_that_agent(fakes: Path, tmp_path: Path) -> None:
    """Run from Claude Code's Bash tool (it sets CLAUDECODE=1), the outcome is Claude Code's."""
    ws, env = _ws_and_env(tmp_path, CLAUDECODE="1")
    cmd = [sys.executable, "-m", "glider_cli", "delegate", "--agy", "--workspace", str(ws), "fix it"]
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    assert continuity.read(resolve(), ws).entries[-1].source_cli == "claude-code"


def test_delegate_under_an_agent_process_records_that_agent(fakes: Path, tmp_path: Path) -> None:
    """No marker in the environment: the nearest ancestor named like an agent CLI says who asked."""
    ws, env = _ws_and_env(tmp_path)
    codex = tmp_path / "agentbin" / "codex"
    codex.parent.mkdir()
    codex.write_text(
        f'#!/bin/sh\n"{sys.executable}" -m glider_cli delegate --agy --workspace "{ws}" "fix it"\n'
    )
    codex.chmod(0o755)
    subprocess.run([str(codex)], env=env, check=True, capture_output=True)
    assert continuity.read(resolve(), ws).entries[-1].source_cli == "codex"


def test_delegate_prints_what_it_changed_and_egress_shows_it(fakes: Path, tmp_path: Path) -> None:
    ws = tmp_path / "plain-ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('hi')\n")
    env = {
        "FAKE_AGENT_MODE": "edit",
        "FAKE_AGENT_EDITS": json.dumps({"app.py": "print('hello')\nprint('bye')\n", "README": "new\n"}),
    }
    r = cli.invoke(app, ["delegate", "--claude", "--workspace", str(ws), "say hello"], env=env)
    assert r.exit_code == 0, r.output
    assert "Changed in the workspace (walk): 2 files, +3 −1" in r.stdout
    assert "-print('hi')\n+print('hello')" in r.stdout
    r = cli.invoke(app, ["context", "egress", "--json"])
    (call,) = json.loads(r.stdout)["calls"]
    assert call["event"] == "DelegateRun" and call["changed"] == "2 files +3 −1"
    r = cli.invoke(app, ["context", "egress"], env={"COLUMNS": "250"})
    assert "changed 2 files +3 −1" in r.stdout


PUSH = {"tool_name": "Bash", "tool_input": {"command": "git push origin main"}}


def _refusing_env() -> dict[str, str]:
    return {"FAKE_AGENT_MODE": "refuse", "FAKE_AGENT_REFUSE": json.dumps([PUSH])}


def test_yes_to_pregrants_and_the_run_resumes(fakes: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ["delegate", "--claude", "--workspace", str(ws), "--yes-to", "Bash,Edit", "push it"]
    r = cli.invoke(app, args, env=_refusing_env())
    assert r.exit_code == 0, r.output
    # The resumed run's answer, once: the refused run's text ("fake claude did it") is not printed.
    assert r.stdout.startswith("resumed with Bash(git push origin main)\n"), r.stdout
    assert "fake claude did it" not in r.stdout
    argv = runs(fakes)[-1]["argv"]
    assert argv[:4] == ["--resume", "fake-session-1", "--allowedTools", "Bash(git push origin main)"]
    texts = [e.text for e in continuity.read(resolve(), ws).entries]
    assert any("Allowed by the person for this run: Bash(git push origin main)" in t for t in texts)


def test_without_a_terminal_or_yes_to_nothing_is_allowed(fakes: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    r = cli.invoke(
        app,
        ["delegate", "--claude", "--workspace", str(ws), "--yes-to", "Edit", "push it"],
        env=_refusing_env(),
    )
    assert r.exit_code == 0, r.output
    assert "claude was refused permission for:\n  - Bash: git push origin main" in r.stdout
    assert "Not allowed. To allow exactly this for one run: --yes-to Bash" in r.stdout
    assert len(runs(fakes)) == 1
    assert "Denied by the person" in continuity.read(resolve(), ws).entries[-1].text


@pytest.mark.parametrize(("typed", "resumed"), [("y\n", True), ("\n", False)])
def test_on_a_terminal_it_asks_y_n(fakes: Path, tmp_path: Path, typed: str, resumed: bool) -> None:
    import pty

    ws = tmp_path / "ws"
    ws.mkdir()
    leader, follower = pty.openpty()
    os.write(leader, typed.encode())
    env = {**os.environ, **_refusing_env(), "FAKE_AGENT_LOG": str(fakes)}
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "delegate", "--claude", "--workspace", str(ws), "push it"],
        stdin=follower,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    os.close(follower)
    os.close(leader)
    assert proc.returncode == 0, proc.stderr
    assert "claude was refused: Bash: git push origin main" in proc.stderr
    assert "Allow exactly this (Bash(git push origin main))" in proc.stderr + proc.stdout
    assert ("resumed with Bash(git push origin main)" in proc.stdout) is resumed
    assert len(runs(fakes)) == (2 if resumed else 1)
