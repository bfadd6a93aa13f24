"""Real Claude Code (npm @anthropic-ai/claude-code) as a delegate, pointed at the fake Anthropic upstream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from delegate_helpers import git_status

import claude_code
from fake_upstream import FakeUpstream
from glider_cli.config.settings import DelegateSettings, Settings
from glider_cli.delegate import continuity, operations
from glider_cli.delegate.entry import Entry
from glider_cli.paths import resolve

pytestmark = [pytest.mark.claude_code, pytest.mark.live, pytest.mark.slow]


def _system_text(body: dict[str, object]) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return str(system or "")


def test_real_claude_code_gets_the_block_and_answers(
    claude_bin: str, git_workspace: Path, tmp_path: Path
) -> None:
    claude = claude_bin
    home = tmp_path / "claude-home"
    home.mkdir()
    p = resolve()
    continuity.append(
        p,
        git_workspace,
        Entry(kind="turn", text="CONTINUITY-MARKER: the parser test fails", source_cli="codex"),
    )
    before = git_status(git_workspace)
    with FakeUpstream(models=[claude_code.MODEL]) as fake:
        fake.set_reply(text="delegated answer from the fake upstream")
        env = claude_code.env(fake.url, home)
        s = Settings(delegate={"claude": DelegateSettings(vendor="claude", command=claude, timeout=180)})
        r = operations.run_flagged(
            p, s, "/claude", "why does the parser test fail?", git_workspace, "codex", environ=env
        )
        messages = [q for q in fake.requests if q.path == "/v1/messages"]
    assert r.ok, r
    assert r.text == "delegated answer from the fake upstream"
    assert messages, "Claude Code sent no request to the fake upstream"
    system = _system_text(messages[0].body)
    assert "Earlier in the calling session" in system
    assert "CONTINUITY-MARKER" in system
    assert "USER-AGENTS-MARKER" in system
    assert "why does the parser test fail?" in json.dumps(messages[0].body["messages"])
    assert git_status(git_workspace) == before
    assert not any(p.run.iterdir())
    last = continuity.read(p, git_workspace).entries[-1]
    assert last.kind == "delegate" and last.ok and last.source_cli == "codex"


def test_real_claude_code_as_the_origin_summary_source(claude_bin: str, tmp_path: Path) -> None:
    from glider_cli.delegate import summarizers

    claude = claude_bin
    home = tmp_path / "claude-home"
    home.mkdir()
    with FakeUpstream(models=[claude_code.MODEL]) as fake:
        fake.set_reply(text="the session fixed the parser")
        env = claude_code.env(fake.url, home)
        s = Settings(delegate={"claude": DelegateSettings(vendor="claude", command=claude, timeout=180)})
        origin = summarizers.sources_for(s, resolve(), env, "claude-code")["origin"]
        assert origin is not None
        assert origin("[2026-11-29T10:00:00Z] user: SUMMARY-INPUT-MARKER fix the parser") == (
            "the session fixed the parser"
        )
        body = next(q for q in fake.requests if q.path == "/v1/messages").body
    assert "SUMMARY-INPUT-MARKER" in _system_text(body)
    assert not any(resolve().run.iterdir())


def test_real_claude_code_refusal_is_relayed_and_allow_resumes_it(
    claude_bin: str, git_workspace: Path, tmp_path: Path
) -> None:
    """The fake upstream has Claude Code run a Bash command its headless permissions refuse; `allow`
    resumes the same session with `--allowedTools` for exactly that command, and it runs."""
    from fake_wire import ToolReply
    from glider_cli.delegate import allow_deny, permissions

    home = tmp_path / "claude-home"
    home.mkdir()
    command = "touch relay-proof.txt"
    p, grants = resolve(), permissions.Grants()
    with FakeUpstream(models=[claude_code.MODEL]) as fake:
        fake.set_reply(
            text="finished", tool=ToolReply("Bash", {"command": command, "description": "t"}, once=True)
        )
        env = claude_code.env(fake.url, home)
        s = Settings(delegate={"claude": DelegateSettings(vendor="claude", command=claude_bin, timeout=180)})
        first = operations.delegate(
            p, s, "claude", "make the proof file", git_workspace, "codex", environ=env, grants=grants
        )
        assert first.refused == (permissions.Refusal("Bash", command, f"Bash({command})"),), first
        assert not (git_workspace / "relay-proof.txt").exists()
        assert first.token is not None and f"/allow {first.token}" in first.reply_text()
        pending = grants.take(first.token)
        assert pending is not None
        resumed = allow_deny.allow(p, s, pending, environ=env, grants=grants)
    assert resumed.ok, resumed
    assert (git_workspace / "relay-proof.txt").exists()
    assert resumed.refused == ()
    # The resumed request carried the first run's conversation (the same session).
    last = [q for q in fake.requests if q.path == "/v1/messages"][-1]
    assert "make the proof file" in json.dumps(last.body["messages"])


def test_after_a_yes_glider_delegate_prints_the_answer_once(
    claude_bin: str, git_workspace: Path, tmp_path: Path
) -> None:
    """`glider delegate --yes-to Bash` with the real Claude Code: refused, resumed, and its final text
    (the same words both times, as a model may well say) printed once, not the refused run's first."""
    import os
    import subprocess
    import sys

    from fake_wire import ToolReply

    home = tmp_path / "claude-home"
    home.mkdir()
    command = "touch relay-proof.txt"
    with FakeUpstream(models=[claude_code.MODEL]) as fake:
        fake.set_reply(
            text="ANSWER-MARKER all done",
            tool=ToolReply("Bash", {"command": command, "description": "t"}, once=True),
        )
        env = {**os.environ, **claude_code.env(fake.url, home)}
        env["PATH"] = f"{Path(claude_bin).parent}{os.pathsep}{env['PATH']}"
        for marker in ("CLAUDECODE", "CODEX_THREAD_ID", "CODEX_SANDBOX", "GEMINI_CLI"):
            env.pop(marker, None)
        argv = ["delegate", "--claude", "--workspace", str(git_workspace), "--yes-to", "Bash", "make it"]
        proc = subprocess.run(
            [sys.executable, "-m", "glider_cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    assert (git_workspace / "relay-proof.txt").exists()  # the resumed run ran the command
    assert proc.stdout.count("ANSWER-MARKER all done") == 1, proc.stdout
    assert proc.stdout.startswith("ANSWER-MARKER all done\n")
