"""The permission relay with a fake vendor CLI per refusal format (delegate.permissions, delegate.allow_deny):
what was refused, in the vendor's terms; a one-shot token; `allow` resumes the same run with exactly
that allowed (Claude Code's `--resume` + `--allowedTools`); `deny` runs nothing; both are recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixtures.fake_agents.install import runs
from glider_cli.config.settings import Settings
from glider_cli.delegate import allow_deny, continuity, operations, permissions
from glider_cli.delegate.permissions import Grants, Refusal
from glider_cli.paths import resolve

PUSH = {"tool_name": "Bash", "tool_input": {"command": "git push origin main", "description": "push"}}


def _refusing(fake_agents: Any, *denials: dict[str, Any], **extra: str) -> dict[str, str]:
    return fake_agents.mode("refuse", FAKE_AGENT_REFUSE=json.dumps(list(denials)), **extra)


def test_claude_refusal_token_and_resume_with_exactly_that_allowed(fake_agents, git_workspace: Path) -> None:
    p, grants = resolve(), Grants()
    edit = {"tool_name": "Write", "tool_input": {"file_path": str(git_workspace / "out.txt"), "content": "x"}}
    env = _refusing(fake_agents, PUSH, edit, FAKE_AGENT_EDITS=json.dumps({"out.txt": "pushed\n"}))
    res = operations.delegate(
        p, Settings(), "claude", "ship it", git_workspace, "codex", environ=env, grants=grants
    )
    assert res.refused == (
        Refusal("Bash", "git push origin main", "Bash(git push origin main)"),
        Refusal("Write", str(git_workspace / "out.txt"), f"Edit(/{git_workspace / 'out.txt'})"),
    )
    assert res.token is not None and len(res.token) == 12
    reply = res.reply_text()
    assert "claude was refused permission for:\n  - Bash: git push origin main\n  - Write: " in reply
    assert f"`/allow {res.token}`" in reply and f"`/deny {res.token}`" in reply
    record = continuity.read(p, git_workspace).entries[-1]
    assert "Refused by its permissions: Bash: git push origin main" in record.text
    pending = grants.take(res.token)
    assert pending is not None and grants.take(res.token) is None  # it works once
    resumed = allow_deny.allow(p, Settings(), pending, environ=env, grants=grants)
    argv = runs(fake_agents.log_dir)[-1]["argv"]
    rules = ["Bash(git push origin main)", f"Edit(/{git_workspace / 'out.txt'})"]
    assert argv[:5] == ["--resume", "fake-session-1", "--allowedTools", *rules]
    assert argv[5] == "-p"  # --allowedTools takes every following word: the run's flags come after
    assert resumed.ok and resumed.text.startswith("resumed with Bash(git push origin main)")
    assert resumed.refused == () and resumed.token is None
    assert (git_workspace / "out.txt").read_text() == "pushed\n"
    last = continuity.read(p, git_workspace).entries[-1]
    assert f"Allowed by the person for this run: {' '.join(rules)}" in last.text
    # Nothing of the grant is kept anywhere: the next run is refused again.
    again = operations.delegate(
        p, Settings(), "claude", "ship it", git_workspace, "codex", environ=env, grants=grants
    )
    assert again.refused and "--allowedTools" not in runs(fake_agents.log_dir)[-1]["argv"]


def test_deny_runs_nothing_and_is_recorded(fake_agents, git_workspace: Path) -> None:
    p, grants = resolve(), Grants()
    res = operations.delegate(
        p,
        Settings(),
        "claude",
        "ship it",
        git_workspace,
        "codex",
        environ=_refusing(fake_agents, PUSH),
        grants=grants,
    )
    assert res.token is not None
    pending = grants.take(res.token)
    assert pending is not None
    count = len(runs(fake_agents.log_dir))
    allow_deny.deny(p, pending, "codex")
    assert len(runs(fake_agents.log_dir)) == count
    last = continuity.read(p, git_workspace).entries[-1]
    assert last.ok is False and "Denied by the person: Bash: git push origin main" in last.text


def test_a_token_expires() -> None:
    now = [100.0]
    grants = Grants(ttl=600, clock=lambda: now[0])
    refused = (Refusal("Bash", "ls", "Bash(ls)"),)
    token = grants.offer("claude", "s1", refused, "/w", "t", "codex")
    assert token is not None
    now[0] += 601
    assert grants.take(token) is None
    assert grants.offer("claude", None, refused, "/w", "t", "codex") is None  # cannot be resumed
    assert grants.offer("claude", "s1", (Refusal("Agent", "", None),), "/w", "t", "codex") is None


@pytest.mark.parametrize(
    ("vendor", "expected"),
    [
        ("cursor-agent", Refusal("shell", "rm -rf build", None)),
        ("codex", Refusal("command", "rm -rf build", None)),
    ],
)
def test_cursor_and_codex_refusals_are_named_never_granted(
    vendor: str, expected: Refusal, fake_agents, git_workspace: Path
) -> None:
    grants = Grants()
    rm = {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}
    env = _refusing(fake_agents, rm)
    res = operations.delegate(
        resolve(), Settings(), vendor, "clean", git_workspace, "codex", environ=env, grants=grants
    )
    assert res.ok and res.refused == (expected,)
    assert res.token is None
    assert f"{vendor} has no switch that allows exactly this for one run" in res.reply_text()
    assert "`/allow" not in res.reply_text()


@pytest.mark.parametrize(
    ("denial", "grant"),
    [
        ({"tool_name": "Bash", "tool_input": {"command": "rm *.log"}}, None),  # `*` would be a wildcard
        ({"tool_name": "Edit", "tool_input": {"file_path": "/w/a.py"}}, "Edit(//w/a.py)"),
        ({"tool_name": "Read", "tool_input": {"file_path": "/etc/hosts"}}, "Read(//etc/hosts)"),
        (
            {"tool_name": "WebFetch", "tool_input": {"url": "https://example.com/x"}},
            "WebFetch(domain:example.com)",
        ),
        ({"tool_name": "mcp__db__query", "tool_input": {"sql": "select 1"}}, "mcp__db__query"),
        ({"tool_name": "Glob", "tool_input": {"pattern": "**"}}, None),
    ],
)
def test_claude_rules_are_exactly_what_was_refused(denial: dict[str, Any], grant: str | None) -> None:
    result = {"type": "result", "permission_denials": [{"tool_use_id": "t", **denial}]}
    (found,) = permissions.refusals("claude", [result])
    assert found.grant == grant


def test_answers_are_read_from_typed_text() -> None:
    assert permissions.answer("/allow 0123456789ab") == ("allow", "0123456789ab")
    assert permissions.answer("ok then /deny 0123456789ab please") == ("deny", "0123456789ab")
    assert permissions.answer("0123456789ab /allow") == ("allow", "0123456789ab")  # Claude Code's expansion
    assert permissions.answer("see 0123456789ab /allow") is None
    assert permissions.answer("/allowed 0123456789ab") is None
    assert permissions.answer("/allow xyz") is None
