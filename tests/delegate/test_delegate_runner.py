"""The runner with fake vendor CLIs: context file, run dir lifecycle, watchdog, output cap, changed files."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from delegate_helpers import git_status

from fixtures.fake_agents.install import runs
from glider_cli.config.settings import DelegateSettings
from glider_cli.delegate import changes, runner
from glider_cli.delegate.agents import ADAPTERS
from glider_cli.errors import DelegateError
from glider_cli.paths import resolve


def _run(vendor: str, ws: Path, env: dict[str, str], timeout: float = 60.0, **kw: object) -> runner.RunResult:
    user_md = runner.read_user_agents_md(ws)
    doc = runner.context_document("# Earlier in the calling session\n\nBLOCK-MARKER\n", ws, user_md)
    return runner.run(
        ADAPTERS[vendor], None, "fix the parser", ws, doc, resolve().run, timeout=timeout, environ=env, **kw
    )  # type: ignore[arg-type]


def _run_dirs() -> list[Path]:
    root = resolve().run
    return sorted(root.iterdir()) if root.exists() else []


@pytest.mark.parametrize("vendor", ["claude", "cursor-agent", "agy", "codex"])
def test_success_context_file_and_cleanup(vendor: str, fake_agents, git_workspace: Path) -> None:
    before = git_status(git_workspace)
    res = _run(vendor, git_workspace, fake_agents.mode("ok"))
    assert res.ok, res
    assert res.text == f"fake {vendor} did it"
    assert res.files == ()
    (rec,) = runs(fake_agents.log_dir)
    expected_file = "glider-context.md" if vendor == "claude" else "AGENTS.md"
    assert Path(rec["context_path"]).name == expected_file
    assert "BLOCK-MARKER" in rec["context"]
    assert "USER-AGENTS-MARKER" in rec["context"]  # the user's own AGENTS.md reaches the delegate
    assert rec["run_dir_mode"] == 0o700
    assert Path(rec["workspace_link"]) == git_workspace.resolve()
    if vendor == "claude":
        assert rec["cwd"] == str(git_workspace)
    else:
        assert rec["cwd"] == rec["run_dir"]
        assert str(git_workspace) in rec["argv"][-1]
    assert _run_dirs() == []
    assert git_status(git_workspace) == before
    assert not (git_workspace / expected_file).exists() or expected_file == "AGENTS.md"
    assert "BLOCK-MARKER" not in (git_workspace / "AGENTS.md").read_text()


@pytest.mark.parametrize("vendor", ["claude", "cursor-agent", "agy", "codex"])
def test_failure_is_reported_and_cleaned_up(vendor: str, fake_agents, git_workspace: Path) -> None:
    before = git_status(git_workspace)
    res = _run(vendor, git_workspace, fake_agents.mode("fail"))
    assert not res.ok
    assert res.text
    assert _run_dirs() == []
    assert git_status(git_workspace) == before


def test_claude_is_error_counts_even_with_exit_zero(fake_agents, git_workspace: Path) -> None:
    res = _run("claude", git_workspace, fake_agents.mode("fail-exit0"))
    assert res.exit_code == 0
    assert not res.ok


def test_agy_empty_output_is_a_failure(fake_agents, git_workspace: Path) -> None:
    res = _run("agy", git_workspace, fake_agents.mode("empty"))
    assert res.exit_code == 0
    assert not res.ok
    assert "nothing" in res.text


def test_timeout_kills_and_cleans_up(fake_agents, git_workspace: Path) -> None:
    before = git_status(git_workspace)
    res = _run("codex", git_workspace, fake_agents.mode("hang"), timeout=1.0)
    assert res.timed_out
    assert not res.ok
    assert "timed out" in res.text
    assert _run_dirs() == []
    assert git_status(git_workspace) == before


def test_cursor_agent_lingering_after_its_result_is_stopped(fake_agents, git_workspace: Path) -> None:
    res = _run("cursor-agent", git_workspace, fake_agents.mode("linger"), timeout=120.0)
    assert res.stopped_after_result
    assert not res.timed_out
    assert res.ok
    assert res.text == "fake cursor-agent did it"


def test_output_is_capped(fake_agents, git_workspace: Path) -> None:
    res = _run("agy", git_workspace, fake_agents.mode("flood"), output_cap=1000)
    assert res.output_truncated
    assert not res.ok


@pytest.mark.parametrize("vendor", ["claude", "codex", "agy"])
def test_changed_files_come_from_git_status(vendor: str, fake_agents, git_workspace: Path) -> None:
    res = _run(vendor, git_workspace, fake_agents.mode("edit", FAKE_AGENT_EDIT="src_new.go"))
    assert res.ok
    assert res.files == ("src_new.go",)
    assert (git_workspace / "src_new.go").exists()
    assert _run_dirs() == []


def test_modified_dirty_file_is_detected(tmp_path: Path, git_workspace: Path) -> None:
    before = changes.take(git_workspace, tmp_path / "scratch")
    (git_workspace / "notes.txt").write_text("changed again\n")
    assert [f.path for f in before.changes().files] == ["notes.txt"]


def test_missing_command_is_a_delegate_error_and_leaves_no_run_dir(git_workspace: Path) -> None:
    spec = DelegateSettings(vendor="claude", command="definitely-not-installed-glider")
    with pytest.raises(DelegateError, match="not found"):
        runner.run(
            ADAPTERS["claude"],
            spec,
            "x",
            git_workspace,
            "",
            resolve().run,
            timeout=5,
            environ={"PATH": "/nonexistent"},
        )
    assert _run_dirs() == []


def test_not_a_git_repo_still_runs(fake_agents, tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    res = _run("claude", ws, fake_agents.mode("ok"))
    assert res.ok
    assert res.files == ()


@pytest.mark.parametrize("vendor", ["claude", "codex"])
def test_a_reply_over_a_mebibyte_loses_its_middle_and_still_succeeds(
    vendor: str, fake_agents, git_workspace: Path
) -> None:
    res = _run(vendor, git_workspace, fake_agents.mode("big"))
    assert res.ok, res.text[:300]
    assert res.output_truncated
    assert len(res.text) <= runner.TEXT_CAP
    assert res.text.startswith("BEGIN xxx") and res.text.endswith("xxx END")
    assert "characters removed from the middle" in res.text


def test_a_failure_says_the_vendors_own_reason(fake_agents, git_workspace: Path) -> None:
    res = _run("claude", git_workspace, fake_agents.mode("logged-out"))
    assert not res.ok
    assert res.text.startswith("claude printed no result object (exit 1)")
    assert res.text.endswith("Not logged in · Please run /login")


def test_progress_is_reported_while_codex_works_and_cancel_stops_it(fake_agents, git_workspace: Path) -> None:
    import threading

    said: list[tuple[float, str]] = []
    t0 = time.monotonic()
    res = _run(
        "codex",
        git_workspace,
        fake_agents.mode("ok", FAKE_AGENT_SLEEP="2"),
        progress=lambda line: said.append((time.monotonic() - t0, line)),
    )
    assert res.ok
    assert said[0][1] == "codex runs: go test ./..." and said[0][0] < 1.5  # before the run ended
    assert ("codex: fake codex did it") in [s for _, s in said]
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    t0 = time.monotonic()
    res = _run("agy", git_workspace, fake_agents.mode("hang"), cancel=stop)
    assert not res.ok and "went away" in res.text and time.monotonic() - t0 < 10
    assert _run_dirs() == []


def test_what_a_vendor_leaves_behind_is_ended_with_the_run(
    fake_agents, git_workspace: Path, tmp_path: Path
) -> None:
    """A CLI that answers and exits, leaving a process that left its process group (and ignores
    SIGTERM): the run ends it, so nothing of the run keeps writing after it returned."""
    from process_tree import all_gone, still_written, tickers

    ticks = tmp_path / "ticks.txt"
    res = _run("claude", git_workspace, fake_agents.mode("leave", FAKE_AGENT_TICKS=str(ticks)))
    assert res.ok and res.text == "fake claude did it"
    (left,) = tickers(ticks, 1)
    assert all_gone({left}) == set()
    assert not still_written(ticks)
    assert _run_dirs() == []
    assert res.stopped is None  # nobody stopped the run: it ended
