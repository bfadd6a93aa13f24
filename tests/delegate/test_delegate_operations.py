"""The API `glider serve` calls: record_turn, parse_flag, run_flagged; continuity across delegates."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from fixtures.fake_agents.install import runs
from glider_cli.config.settings import ContextSettings, DelegateSettings, Settings, SummarySettings
from glider_cli.delegate import continuity, operations
from glider_cli.delegate.entry import Entry
from glider_cli.errors import DelegateError
from glider_cli.paths import resolve


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        self.events.append((type, dict(data)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("please fix the parser /cursor-agent", ("/cursor-agent", "please fix the parser")),
        ("/agy write tests", ("/agy", "write tests")),
        ("ask /claude\nto review", ("/claude", "ask to review")),
        ("see /claudes and a/claude path", None),
        ("no flag here", None),
    ],
)
def test_parse_flag(text: str, expected: tuple[str, str] | None) -> None:
    assert operations.parse_flag(text) == expected


def test_record_turn(git_workspace: Path) -> None:
    p = resolve()
    assert operations.record_turn(p, Settings(), git_workspace, "   ", "claude-code") is None
    e = operations.record_turn(p, Settings(), git_workspace, "hello", "claude-code")
    assert e is not None
    assert continuity.read(p, git_workspace).entries == (e,)


def test_two_delegates_see_the_session_and_each_other(fake_agents, git_workspace: Path) -> None:
    p, s, sink = resolve(), Settings(), Sink()
    env = fake_agents.mode("edit", FAKE_AGENT_EDIT="parser_fix.go")
    operations.record_turn(
        p, s, git_workspace, "TestParseEmpty fails with a nil pointer in parser.go", "claude-code"
    )
    msg = "fix the nil pointer in parser.go /cursor-agent"
    operations.record_turn(p, s, git_workspace, msg, "claude-code")
    flag, task = operations.parse_flag(msg)  # type: ignore[misc]
    r1 = operations.run_flagged(p, s, flag, task, git_workspace, "claude-code", events=sink, environ=env)
    assert r1.ok and r1.files == ("parser_fix.go",)
    # The reply ends with what the run changed, from the workspace (delegate.changes).
    assert r1.reply_text().startswith(
        "fake cursor-agent did it\n\nChanged in the workspace (git): 1 file, +1 −0"
    )
    first = runs(fake_agents.log_dir)[-1]
    assert "TestParseEmpty" in first["context"]
    assert first["context"].count("fix the nil pointer") == 0  # the flagged turn itself is not repeated

    r2 = operations.run_flagged(
        p,
        s,
        "/agy",
        "add a test for the parser nil pointer",
        git_workspace,
        "claude-code",
        events=sink,
        environ=fake_agents.mode("ok"),
    )
    assert r2.ok
    second = runs(fake_agents.log_dir)[-1]
    assert "cursor-agent run, ok; changed parser_fix.go" in second["context"]
    entries = continuity.read(p, git_workspace).entries
    assert [e.kind for e in entries] == ["turn", "turn", "delegate", "delegate"]
    assert entries[2].source_cli == "claude-code" and entries[2].delegate == "cursor-agent"
    assert [t for t, _ in sink.events] == ["DelegateRun", "DelegateRun"]
    assert sink.events[0][1]["files"] == ["parser_fix.go"]
    # The vendor reports no usage: the run's tokens are estimated (the task, the block, the answer).
    run = sink.events[0][1]
    assert run["estimated"] == ["input_tokens", "output_tokens"]
    assert run["input_tokens"] >= len(msg) // 8 and run["output_tokens"] == len(r1.text.encode()) // 4 + (
        len(r1.text.encode()) % 4 > 0
    )


def test_failure_is_recorded_not_raised(fake_agents, git_workspace: Path) -> None:
    p = resolve()
    r = operations.run_flagged(
        p, Settings(), "/agy", "do it", git_workspace, "codex", environ=fake_agents.mode("fail")
    )
    assert not r.ok and r.reply_text().startswith("[agy failed]")
    e = continuity.read(p, git_workspace).entries[-1]
    assert e.kind == "delegate" and e.ok is False and e.source_cli == "codex"


def test_command_not_found_is_a_failed_result(git_workspace: Path) -> None:
    s = Settings(delegate={"claude": DelegateSettings(vendor="claude", command="no-such-claude-binary")})
    r = operations.run_flagged(
        resolve(), s, "/claude", "x", git_workspace, "codex", environ={"PATH": "/nonexistent"}
    )
    assert not r.ok and "not found" in r.text


def test_unknown_flag_and_empty_task() -> None:
    with pytest.raises(DelegateError):
        operations.run_flagged(resolve(), Settings(), "/gemini", "x", "/tmp", "c")
    with pytest.raises(DelegateError):
        operations.delegate(resolve(), Settings(), "claude", "  ", "/tmp", "c")


def test_configured_model_and_timeout_reach_the_vendor(fake_agents, git_workspace: Path) -> None:
    s = Settings(delegate={"agy": DelegateSettings(vendor="agy", command="agy", model="m-1", timeout=1.0)})
    r = operations.delegate(resolve(), s, "agy", "x", git_workspace, "c", environ=fake_agents.mode("hang"))
    assert r.timed_out
    assert "--model" in runs(fake_agents.log_dir)[-1]["argv"]
    assert "--yolo" not in runs(fake_agents.log_dir)[-1]["argv"]


def test_record_turn_schedules_background_compaction(git_workspace: Path) -> None:
    p = resolve()
    s = Settings(context=ContextSettings(summary=SummarySettings(enabled=False)))
    sink = Sink()
    compactor = operations.make_compactor(p, s, environ={}, events=sink)
    for i in range(41):
        operations.record_turn(p, s, git_workspace, f"turn {i}", "claude-code", compactor=compactor)
    compactor.wait()
    compactor.close()
    entries = continuity.read(p, git_workspace).entries
    assert entries[0].is_summary and len(entries) == 21
    assert sink.events[-1][0] == "ContinuityCompacted" and sink.events[-1][1]["source"] == "digest"


def test_record_turn_keeps_the_persons_words_only(git_workspace: Path) -> None:
    p = resolve()
    text = (
        "<system-reminder>\nContents of CLAUDE.md ...\n</system-reminder>\n"
        "<system-reminder>gitStatus: clean</system-reminder>\nfix the flaky test"
    )
    e = operations.record_turn(p, Settings(), git_workspace, text, "claude-code")
    assert e is not None and e.text == "fix the flaky test"
    assert (
        operations.record_turn(
            p, Settings(), git_workspace, "<environment_context>x</environment_context>", "codex"
        )
        is None
    )


def test_parse_flag_ignores_reminders() -> None:
    text = "<system-reminder>use /claude for reviews</system-reminder>\nreview the diff /agy"
    assert operations.parse_flag(text) == ("/agy", "review the diff")


def test_codex_context_stays_within_its_agents_md_limit(git_workspace: Path) -> None:
    # Half of the entries about the parser: a term in more than half of them would weigh nothing.
    entries = tuple(
        Entry(
            kind="turn", text=f"{'parser issue' if i % 2 else 'lexer'} {i} " + "word " * 800, source_cli="c"
        )
        for i in range(40)
    )
    doc, block = operations.prepare_context(Settings(), "codex", "parser issue", git_workspace, entries)
    assert len(doc.encode()) <= 32 * 1024
    assert "USER-AGENTS-MARKER" in doc and block.items
    claude_doc, _ = operations.prepare_context(Settings(), "claude", "parser issue", git_workspace, entries)
    assert len(claude_doc.encode()) > 32 * 1024  # no such limit for claude


def test_missing_workspace_is_an_error_and_records_nothing(tmp_path: Path) -> None:
    with pytest.raises(DelegateError, match="not a directory"):
        operations.delegate(resolve(), Settings(), "agy", "x", tmp_path / "gone", "c")
    assert not resolve().continuity.exists() or not any(resolve().continuity.iterdir())
